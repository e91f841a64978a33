pairs = {(a, b) for a in range(3) for b in range(3) if a < b}
print(sorted(pairs), len(pairs))
edges = {(1, 2), (2, 3), (1, 2)}
print(sorted(edges))
neighbours = {}
for a, b in sorted(edges):
    neighbours.setdefault(a, set()).add(b)
    neighbours.setdefault(b, set()).add(a)
print({k: sorted(v) for k, v in sorted(neighbours.items())})
print({1, 2} <= {1, 2, 3}, {1, 2} >= {2}, {3} > {3})
