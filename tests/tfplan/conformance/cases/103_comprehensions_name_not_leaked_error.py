vals = [v * 2 for v in range(3)]
print(vals)
print(v)
