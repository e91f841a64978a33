rows = [{"n": 2}, {"n": 1}, {"m": 0}]
print(sorted(rows[:2], key=lambda r: r["n"]))
print(sorted(rows, key=lambda r: r["n"]))
