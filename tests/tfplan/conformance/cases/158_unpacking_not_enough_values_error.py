parts = "a=1".split("=")
k, v = parts
print(k, v)
k, v, t = parts
print(t)
