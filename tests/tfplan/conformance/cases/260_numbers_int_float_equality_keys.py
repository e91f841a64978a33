d = {1: "int", 2.0: "float"}
d[1.0] = "float one"
d[True] = "bool"
print(d)
print(d[2], 2 in d, len(d))
s = {1, 1.0, True, 2}
print(len(s), sorted(s))
