print(1 << 3, 8 >> 1)
print(1 << -1)
