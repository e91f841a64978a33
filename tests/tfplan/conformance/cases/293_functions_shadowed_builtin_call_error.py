len = 3
print(len + 1)
items = [1, 2]
print(len(items))
