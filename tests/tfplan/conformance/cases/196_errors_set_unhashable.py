seen = set()
seen.add((1, 2))
print(len(seen))
seen.add([1, 2])
