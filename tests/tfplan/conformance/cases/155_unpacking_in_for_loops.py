pairs = [("a", (1, 2)), ("b", (3, 4))]
for name, (x, y) in pairs:
    print(name, x + y)
for i, (k, v) in enumerate({"p": 1, "q": 2}.items()):
    print(i, k, v)
for first, *others in [[1, 2, 3], [4]]:
    print(first, others)
