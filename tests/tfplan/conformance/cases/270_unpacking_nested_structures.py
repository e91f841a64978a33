records = [("ann", (31, "dev"), ["a", "b"]), ("bob", (25, "ops"), ["c"])]
for name, (age, dept), (first, *more) in records:
    print(name, age, dept, first, more)
(a, (b, (c, d))) = (1, (2, (3, 4)))
print(a + b + c + d)
matrix = [[1, 2], [3, 4]]
[[w, x], [y, z]] = matrix
print(w * z - x * y)
