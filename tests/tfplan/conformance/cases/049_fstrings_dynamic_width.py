rows = [("alpha", 1.5), ("be", 22.25), ("gamma", 333.125)]
w = max(len(r[0]) for r in rows)
for label, val in rows:
    print(f"{label:<{w}} | {val:>{w + 3}.2f}")
prec = 1
print(f"{3.14159:.{prec}f} {3.14159:.{prec + 2}f}")
