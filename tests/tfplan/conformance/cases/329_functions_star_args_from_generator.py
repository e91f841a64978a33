def show(*args, **kw):
    return f"{args} {sorted(kw.items())}"
print(show(*(x * x for x in range(4))))
print(show(*"ab", *range(2), k=1, **{"j": 2}))
print(max(*[3, 9, 4]), min(*"zya"))
