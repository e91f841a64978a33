print(divmod(9, 4))
q, r = divmod(9, 0)
print(q, r)
