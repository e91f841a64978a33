items = [1, 2, 3, 4, 5, 6]
for x in items[:]:
    if x % 2 == 0:
        items.remove(x)
print(items)
d = {"a": 1, "b": 0, "c": 2}
for k in list(d):
    if d[k] == 0:
        del d[k]
print(d)
