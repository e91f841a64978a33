index = {}
index["ok"] = 1
print(index)
index[["not", "hashable"]] = 2
