values = [[1, 2], "ab", 7]
for v in values:
    print(len(v))
