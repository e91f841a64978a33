a = list(range(6))
a[::2] = ["a", "b", "c"]
print(a)
a[::2] = ["only", "two"]
print(a)
