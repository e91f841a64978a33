d = {"x": 1, "y": 2, "z": 3}
print(d.popitem(), d)
print(list(reversed(d)), list(reversed(d.items())), list(reversed(d.values())))
d["w"] = 0
print(d.popitem(), d.popitem(), d)
