print(int(1e100))
print(float(2 ** 1000) > 1e300, str(1e100), int(2.5e20))
print(2 ** 10000 % 10 ** 12, len(str(2 ** 10000)))
