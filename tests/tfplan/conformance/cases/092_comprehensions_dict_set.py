words = ["apple", "bob", "kayak", "tree", "noon"]
print({w: len(w) for w in words})
print({w[0]: w for w in words})
print({len(w) for w in words})
print({w for w in words if w == w[::-1]} == {"bob", "kayak", "noon"})
inv = {v: k for k, v in {"a": 1, "b": 2}.items()}
print(inv)
