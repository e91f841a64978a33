def make_all():
    out = []
    for i in range(3):
        def f():
            return i
        out.append(f)
    return out
print([f() for f in make_all()])
def make_bound():
    out = []
    for i in range(3):
        def f(i=i):
            return i
        out.append(f)
    return out
print([f() for f in make_bound()])
