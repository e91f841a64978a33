d = {}
d["z"] = 1
d["a"] = 2
d["m"] = 3
print(d)
d["z"] = 10
print(d)
del d["z"]
d["z"] = 0
print(d, list(d))
print(dict(sorted(d.items())))
