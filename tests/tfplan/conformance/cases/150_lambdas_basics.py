sq = lambda x: x * x
add = lambda a, b=10: a + b
print(sq(7), add(1), add(1, 2), (lambda: "now")(), (lambda *a: len(a))(1, 2, 3))
print((lambda x, *, k: x * k)(3, k=4), (lambda **kw: sorted(kw))(b=1, a=2))
choose = lambda c: (lambda: "yes") if c else (lambda: "no")
print(choose(True)(), choose(False)())
