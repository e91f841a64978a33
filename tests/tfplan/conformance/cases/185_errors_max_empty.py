groups = {"a": [3, 1], "b": []}
for name, vals in groups.items():
    print(name, max(vals))
