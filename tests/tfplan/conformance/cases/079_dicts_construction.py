print(dict(a=1, b=2), dict([("x", 1), ("y", 2)]), dict(zip("abc", range(3))))
print({**{"a": 1}, **{"b": 2, "a": 3}})
print(dict({"k": 1}, k2=2), dict())
print({"a": 1} | {"b": 2}, {"a": 1} == {"a": 1.0})
keys = ["p", "q"]
print({k: len(k) * 2 for k in keys}, dict(zip(keys, [0] * len(keys))))
