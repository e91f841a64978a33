def side(tag, v):
    print("evaluated", tag)
    return v
x = side("yes", 1) if side("cond", True) else side("no", 2)
y = side("yes", 1) if side("cond", 0) else side("no", 2)
print(x, y)
