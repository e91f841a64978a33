# Paths the guards take for large-but-honest values give CPython's results.
a, *rest = range(10)
print(a, rest)
x, (y, *z) = 1, [2, 3, 4]
print(x, y, z)
for head, *tail in [[1, 2, 3], (4, 5)]:
    print(head, tail)
print([t for h, *t in [(1, 2), (3, 4, 5)]])
xs = [0, 1, 2, 3, 4]
xs[1:3] = range(7, 10)
xs[::2] = "abc"
print(xs)
p, xs[:1] = 5, (9, 9)
print(p, xs)
print(divmod(10 ** 30 + 7, 10 ** 20 + 3), (10 ** 30) // (10 ** 19 + 1), (10 ** 30) % 97)
print(pow(3, -1, 7), pow(3, 10 ** 3, 10 ** 9 + 7), int("ff", 16), int("7" * 30, 8), int(" 42 "))
n = 10 ** 40
n //= 7
n %= 10 ** 25
print(n)
print("%s-%05d-%.3f" % ("a", 42, 3.14159))
print("%(name)s is %(age)d" % {"name": "Ann", "age": 7})
v = 7
print(f"{v}{v}{v}{v}{v}{v}{v}{v}{v}{v:>3}{v!r}{'x'}{v:.2f}")
print(list(map(lambda i: i * i, range(5))), list(filter(lambda i: i % 2, range(7))))
print(list(zip("ab", [1, 2], (True, None))), list(enumerate("xyz", 1)))
print(5 in map(abs, range(-9, 0)), 50 in map(abs, range(-9, 0)))
rows = [{"k": i % 3, "v": i} for i in range(9)]
rows.sort(key=lambda r: (r["k"], -r["v"]))
print([r["v"] for r in rows])
print(sorted({"b": [2], "a": [1]}.items()), sorted({1: "z", 2: "y"}.values()))
print(set({0: (1, 2), 1: (1, 2)}.values()), {*[1, 2, 2], *{3: 0}.keys()})
print(dict([("a", 1), ["b", 2]], c=3), [3, [1], 2].index([1]))
d = {}
d.update([("x", 1)], y=2)
print(d)
print("a", "b", sep="--", end="!\n")
items = []
for i in range(5):
    items.append(i)
    items.insert(0, -i)
print(items)
