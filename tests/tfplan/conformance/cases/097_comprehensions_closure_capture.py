fs = [lambda: i for i in range(3)]
print([f() for f in fs])
gs = [lambda i=i: i for i in range(3)]
print([g() for g in gs])
base = 10
adders = [lambda x, k=k: x + k + base for k in range(3)]
base = 100
print([a(1) for a in adders])
