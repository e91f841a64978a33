rows = [{"n": 2}, {"n": 1}]
print(sorted(rows, key=lambda r: r["n"]))
print(sorted(rows))
