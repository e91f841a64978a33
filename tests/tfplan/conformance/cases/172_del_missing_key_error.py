cache = {"a": 1}
del cache["a"]
print(cache)
del cache["a"]
