print(float(2 ** 1000) > 0)
print(2.0 ** 2000)
