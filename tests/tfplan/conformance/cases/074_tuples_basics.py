t = (3, "a", [1])
print(t, len(t), t[1], t[-1], t.count("a"), t.index([1]))
t[2].append(2)
print(t)
single = (5,)
empty = ()
print(single, empty, len(empty), (1, 2) + (3,), (0,) * 3)
print(tuple("abc"), tuple([1, 2]), tuple(range(3)))
a, b = 1, 2
pair = a, b
print(pair, pair == (1, 2))
