vals = [1, 1.0, True, "1", None, [1], (1,), {"a": 1}]
for v in vals:
    print(repr(v), isinstance(v, int), isinstance(v, (int, float)), isinstance(v, str))
print(isinstance(True, bool), isinstance(1, bool))
print(isinstance([], list), isinstance({}, dict), isinstance((), tuple), isinstance(set(), set))
