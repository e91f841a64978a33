a = list(range(8))
a[2:4] = ["x", "y", "z"]
print(a)
a[:2] = []
print(a)
a[::2] = [0, 0, 0, 0]
print(a)
a[len(a):] = [99]
print(a)
b = a
b[:] = [1, 2]
print(a, b, a is b)
