x = 2 ** 200
print(x)
print(len(str(x)), x % 1000007)
f = 1
for i in range(1, 31):
    f *= i
print(f)
print(f // 2 ** 20, f % 10 ** 9)
print(-(10 ** 30) // 7, -(10 ** 30) % 7)
