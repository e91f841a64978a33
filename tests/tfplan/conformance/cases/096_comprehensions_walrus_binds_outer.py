values = [4, 9, 16]
roots = [r for v in values if (r := int(v ** 0.5)) > 2]
print(roots, r)
data = [1, 5, 2]
print(any((hit := d) > 4 for d in data), hit)
