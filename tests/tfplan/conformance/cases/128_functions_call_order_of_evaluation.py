log = []
def f(tag, val):
    log.append(tag)
    return val
r = f("a", 1) + f("b", 2) * f("c", 3)
print(r, log)
log.clear()
d = {f("k1", "x"): f("v1", 1), f("k2", "y"): f("v2", 2)}
print(d, log)
log.clear()
print(f("x", [1, 2])[f("y", 0)], log)
