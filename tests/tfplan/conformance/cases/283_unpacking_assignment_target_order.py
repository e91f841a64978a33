i = 0
a = [0, 0, 0]
i, a[i] = 1, 5
print(i, a)
b = [1, 2, 3]
b[0], b[b[0]] = 2, 9
print(b)
x = y = []
x.append(1)
print(x, y, x is y)
j = k = 3
j += 1
print(j, k)
