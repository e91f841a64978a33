values = [3, 1, 2]
print(sorted(values))
values.append("4")
print(sorted(values))
