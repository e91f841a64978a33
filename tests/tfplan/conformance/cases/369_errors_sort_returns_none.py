names = ["b", "c", "a"]
ordered = names.sort()
print(names, ordered)
print(ordered[0])
