d = {"a": 1, "b": 2}
ks = d.keys()
vs = d.values()
d["c"] = 3
print(list(ks), list(vs), len(ks))
print(sorted(d.items(), reverse=True))
print("a" in ks, 3 in vs, ("b", 2) in d.items())
print(list(d.keys() & {"a", "z"}), sorted(d.keys() - {"a"}))
