for v in [0, 1, -1, 0.0, "", " ", "0", [], [0], {}, {"": 0}, set(), None, (), (None,)]:
    print(repr(v), bool(v))
