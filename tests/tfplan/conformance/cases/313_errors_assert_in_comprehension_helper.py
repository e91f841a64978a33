def checked(x):
    assert x != 3, "three is not allowed"
    return x * 2
print([checked(x) for x in [1, 2]])
print([checked(x) for x in range(5)])
