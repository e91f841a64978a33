data = [4, 2, 0, 1]
print([10 // d for d in data[:2]])
print([10 // d for d in data])
