a = [1, 2, 3]
b = a
b.append(4)
print(a, a is b, a == b)
c = list(a)
c.append(5)
print(a, c)
grid = [[0] * 3] * 2
grid[0][0] = 1
print(grid)
grid2 = [[0] * 3 for row in range(2)]
grid2[0][0] = 1
print(grid2)
