a = [1, 2]
a.append(a)
print(a)
d = {"k": 1}
d["self"] = d
print(d)
print(len(a), a[2][2][0])
