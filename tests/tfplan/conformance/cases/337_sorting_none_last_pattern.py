items = [{"n": "a", "p": 3}, {"n": "b", "p": None}, {"n": "c", "p": 1}, {"n": "d", "p": None}]
ordered = sorted(items, key=lambda it: (it["p"] is None, it["p"] or 0))
print([it["n"] for it in ordered])
ordered = sorted(items, key=lambda it: (it["p"] is not None, -(it["p"] or 0)))
print([it["n"] for it in ordered])
