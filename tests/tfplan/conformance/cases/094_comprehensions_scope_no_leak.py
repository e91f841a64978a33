x = "outer"
squares = [x * x for x in range(4)]
print(x, squares)
total = sum(y for y in range(5))
print(total)
d = {k: k for k in "ab"}
print(d)
k = "kept"
s = {k for k in [1, 2]}
print(k, s)
