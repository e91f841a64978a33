big = 2 ** 1100
print(big % 1000)
print(float(big))
