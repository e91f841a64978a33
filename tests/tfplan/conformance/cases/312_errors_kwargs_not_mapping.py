def f(**kw):
    return kw
print(f(**{"a": 1}))
print(f(**[("a", 1)]))
