d = {"x": 3, "a": 9, "m": 1}
print(sorted(d), sorted(d, reverse=True), sorted(d.values()))
print(list(reversed(sorted(d.items(), key=lambda kv: kv[1]))))
print(list(reversed([1, 2, 3])), list(reversed("abc")), list(reversed(range(3))))
print(sorted(set([5, 3, 5, 1])))
