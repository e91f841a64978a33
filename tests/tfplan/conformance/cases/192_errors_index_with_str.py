items = ["a", "b"]
print(items[1])
print(items["1"])
