def lookup(table, key):
    if key not in table:
        raise KeyError(key)
    return table[key]
def resolve(names):
    table = {"a": 1, "b": 2}
    return [lookup(table, n) for n in names]
print(resolve(["a", "b"]))
print(resolve(["b", "c"]))
