def scale(x, factor=2):
    return x * factor

print(scale(3), scale(3, factor=3))
print(scale(3, fctor=4))
