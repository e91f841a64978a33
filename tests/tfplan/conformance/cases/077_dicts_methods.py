d = {"a": 1, "b": 2}
d["c"] = 3
print(d, len(d), d["b"], d.get("z"), d.get("z", 0))
print(list(d.keys()), list(d.values()), list(d.items()))
print(d.pop("a"), d.pop("zz", "dflt"), d)
print(d.setdefault("b", 100), d.setdefault("n", []), d)
d.update({"b": 20, "e": 5})
d.update(f=6)
print(d)
e = d.copy()
d.clear()
print(d, e)
