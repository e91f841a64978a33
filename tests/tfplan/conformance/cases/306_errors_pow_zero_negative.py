print(pow(2, -2), 0 ** 0)
print(0.0 ** -1)
