rows = [("b", 1), ("a", 2), ("c", 1), ("d", 2), ("e", 1)]
rows.sort(key=lambda r: r[1], reverse=True)
print(rows)
rows.sort(key=lambda r: r[0])
rows.sort(key=lambda r: r[1])
print(rows)
print(max([(1, "b"), (1, "a")]), min(["bb", "a", "ccc"], key=len), max("b", "a", "c", key=lambda s: -ord(s)))
