tiers = [(0, 100, 0.10), (100, 500, 0.08), (500, None, 0.05)]
def cost(units):
    total = 0.0
    for lo, hi, rate in tiers:
        if units <= lo:
            break
        top = units if hi is None else min(units, hi)
        total += (top - lo) * rate
    return round(total, 2)
for u in [0, 50, 100, 250, 500, 1200]:
    print(f"{u:>5} units -> ${cost(u):>7.2f}")
