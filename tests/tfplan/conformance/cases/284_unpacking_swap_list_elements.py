xs = [5, 3, 8, 1]
n = len(xs)
for p in range(n):
    for q in range(n - 1 - p):
        if xs[q] > xs[q + 1]:
            xs[q], xs[q + 1] = xs[q + 1], xs[q]
print(xs)
m = {"a": 1, "b": 2}
m["a"], m["b"] = m["b"], m["a"]
print(m)
