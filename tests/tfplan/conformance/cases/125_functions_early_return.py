def first_negative(xs):
    for x in xs:
        if x < 0:
            return x
    return None

print(first_negative([3, -1, -5]), first_negative([1, 2]))
def sign(x):
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0
print([sign(v) for v in [-3, 0, 8]])
