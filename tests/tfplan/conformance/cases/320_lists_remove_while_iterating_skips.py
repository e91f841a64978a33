xs = [2, 4, 5, 6, 8, 9]
for x in xs:
    if x % 2 == 0:
        xs.remove(x)
print(xs)
ys = [1, 2, 3, 4]
for i, y in enumerate(ys):
    if i == 1:
        ys.pop(0)
    print(i, y)
