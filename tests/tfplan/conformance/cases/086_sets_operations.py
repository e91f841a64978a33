a = {1, 2, 3, 4}
b = {3, 4, 5}
print(a | b, a & b, a - b, b - a, a ^ b)
print(a.union(b), a.intersection(b), a.difference(b), a.symmetric_difference(b))
print({1, 2}.issubset(a), a.issuperset({1, 9}), a.isdisjoint({7, 8}))
print(len(a), 3 in a, 9 not in a, {1, 2} == {2, 1}, {1} < {1, 2})
