a = [1, 2, 3]
b = [2]
print(a + b)
print(a - b)
