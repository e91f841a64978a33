def pair(a, b):
    return (a, b)
print(pair(1, 2))
print(pair(1, 2, 3))
