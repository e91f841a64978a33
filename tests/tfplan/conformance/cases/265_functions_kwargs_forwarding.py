def base(a, b=0, *, c=1, **extra):
    return {"a": a, "b": b, "c": c, "extra": extra}
def wrapper(*args, **kwargs):
    kwargs.setdefault("c", 99)
    return base(*args, **kwargs)
print(wrapper(1))
print(wrapper(1, 2, c=3))
print(wrapper(a=5, z=7))
opts = {"b": 4, "q": 0}
print(base(0, **opts))
