def require_int(x):
    if not isinstance(x, int) or isinstance(x, bool):
        raise TypeError("expected int, got " + repr(x))
    return x
print(require_int(3))
print(require_int(True))
