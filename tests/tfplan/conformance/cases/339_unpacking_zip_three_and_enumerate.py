names = ["a", "b", "c"]
ages = [30, 40, 50]
cities = ("x", "y", "z")
for i, (n, a, c) in enumerate(zip(names, ages, cities), start=-1):
    print(i, n, a, c)
keys, vals = zip(*[("k1", 1), ("k2", 2)])
print(keys, vals)
print(dict(zip(names, zip(ages, cities))))
