xs = [0.1] * 10
print(sum(xs), sum(xs) == 1.0, round(sum(xs), 10))
print(1e16 + 1 - 1e16, 1e16 - 1e16 + 1)
total = 0.0
for x in [1e-3] * 1000:
    total += x
print(total, f"{total:.6f}")
