a = list(range(12))
del a[::3]
print(a)
del a[-2:]
print(a)
del a[1:3]
print(a)
