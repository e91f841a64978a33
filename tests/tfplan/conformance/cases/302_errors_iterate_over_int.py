n = 3
for i in range(n):
    print(i)
for i in n:
    print(i)
