m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
t = [[m[r][c] for r in range(3)] for c in range(3)]
print(t)
print([row[::-1] for row in m])
print(sum(m[i][i] for i in range(3)), sum(m[i][2 - i] for i in range(3)))
flat = [x for row in m for x in row]
print(flat)
print(list(zip(*m)))
