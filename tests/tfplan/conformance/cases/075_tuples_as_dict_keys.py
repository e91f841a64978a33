grid = {}
for x in range(3):
    for y in range(2):
        grid[(x, y)] = x * 10 + y
print(grid[(2, 1)], grid.get((5, 5)), (1, 0) in grid)
print(sorted(grid)[:3])
print({k: v for k, v in grid.items() if k[0] == k[1]})
