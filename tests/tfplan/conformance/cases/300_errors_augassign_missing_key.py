counts = {"a": 1}
counts["a"] += 1
print(counts)
counts["b"] += 1
print(counts)
