value = 42
print(value)
a, b = value
