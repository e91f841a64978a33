grid = [[1, 2, 3], [4, 99, 6], [7, 8, 9]]
target = 99
found = None
for r, row in enumerate(grid):
    for c, val in enumerate(row):
        if val == target:
            found = (r, c)
            break
    if found:
        break
print(found)
for row in grid:
    for val in row:
        if val > 5:
            break
    else:
        print("row without big values", row)
