vals = [None, True, 3, 2.0, "s", [1, "a"], (1,), {"k": None}]
for v in vals:
    print(f"{v} {v!r} {v!s}")
