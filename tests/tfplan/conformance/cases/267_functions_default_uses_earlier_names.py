SCALE = 3
def scaled(x, factor=SCALE * 2, label="x" + str(SCALE)):
    return label, x * factor
print(scaled(1), scaled(2, 1))
def chain(x, fs=(abs, str, len)):
    for f in fs:
        x = f(x)
    return x
print(chain(-12345), chain(-5, (abs,)))
