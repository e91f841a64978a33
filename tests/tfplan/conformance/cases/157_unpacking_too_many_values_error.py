row = ("id", "name", "extra")
print(len(row))
key, name = row
print(key, name)
