xs = []
xs.extend("ab")
xs.extend(range(2))
xs.extend((9,))
xs.extend({"k": 1})
xs += "cd"
print(xs, len(xs))
ys = [0] * 3 + [1] * 2
print(ys, ys.count(0), [None] * 2)
