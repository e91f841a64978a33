table = [[3, 7, 1], [9, 2, 8], [4, 6, 5]]
row_sums = [sum(r) for r in table]
col_sums = [sum(c) for c in zip(*table)]
print(row_sums, col_sums)
best_row = row_sums.index(max(row_sums))
print("best row", best_row, table[best_row])
coords = [(r, c) for r in range(3) for c in range(3) if table[r][c] > 5]
print(coords)
norm = [[round(v / row_sums[i], 3) for v in row] for i, row in enumerate(table)]
print(norm)
