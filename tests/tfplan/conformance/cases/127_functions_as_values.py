def double(x):
    return x * 2
def inc(x):
    return x + 1
pipeline = [double, inc, double]
v = 3
for fn in pipeline:
    v = fn(v)
print(v)
ops = {"d": double, "i": inc}
print(ops["d"](ops["i"](10)))
def apply(fn, *args):
    return fn(*args)
print(apply(max, 3, 9, 2), apply(len, "abcd"))
