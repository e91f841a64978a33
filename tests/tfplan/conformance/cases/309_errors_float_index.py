items = ["a", "b", "c"]
mid = len(items) / 2
print(mid)
print(items[mid])
