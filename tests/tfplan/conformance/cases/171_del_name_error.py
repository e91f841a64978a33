value = 10
print(value)
del value
print(value)
