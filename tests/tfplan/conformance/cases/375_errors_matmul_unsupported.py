a = [1, 2]
b = [3, 4]
print(sum(x * y for x, y in zip(a, b)))
print(a @ b)
