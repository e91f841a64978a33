x = 5
y = [0, 1, 2, 3, 4]
d = {"a": 1, "b": 2, "c": 3}
del y[1]
del d["b"]
print(y, d)
del y[-1], d["a"]
print(y, d)
del x
x = "rebound"
print(x)
