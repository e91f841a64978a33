a, b = 1, 2
a, b = b, a
print(a, b)
x, y, z = "xyz"
print(x, y, z)
(p, q), r = (1, 2), 3
print(p, q, r)
[m, n] = [5, 6]
print(m, n)
i = j = k = 0
print(i, j, k)
