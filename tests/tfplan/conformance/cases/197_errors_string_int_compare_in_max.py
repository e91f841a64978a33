vals = [1, 5, 3]
print(max(vals))
vals.append("9")
print(max(vals))
