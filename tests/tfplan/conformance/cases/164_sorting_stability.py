records = [("b", 2), ("a", 1), ("c", 2), ("d", 1), ("e", 3)]
print(sorted(records, key=lambda r: r[1]))
print(sorted(records, key=lambda r: r[1], reverse=True))
by_name_desc = sorted(records, key=lambda r: r[0], reverse=True)
print(sorted(by_name_desc, key=lambda r: r[1]))
