rows = [[0, 0], [0, 0]]
alias = rows[0]
alias[1] = 5
rows[1] = alias
alias.append(9)
print(rows)
copy = [r[:] for r in rows]
copy[0][0] = -1
print(rows, copy)
