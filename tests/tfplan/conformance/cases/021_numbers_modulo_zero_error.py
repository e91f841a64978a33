values = [10, 20, 30]
print("start", sum(values))
print(values[0] % 7)
r = values[1] % (len(values) - 3)
print(r)
