grid = ["#..#", "....", ".#.#"]
hits = []
for r, row in enumerate(grid):
    for c, ch in enumerate(row):
        if ch == "#":
            hits.append((r, c))
print(hits)
first = None
for r, row in enumerate(grid):
    c = row.find("#", 1)
    if c != -1:
        first = (r, c)
        break
print(first)
