values = [0.1, 1.0, 1e16, 1e-5, 123456789.125, 3.14159, -0.0, 1e22, 2.5e-10]
for v in values:
    print(v, repr(v), str(v))
print(values)
