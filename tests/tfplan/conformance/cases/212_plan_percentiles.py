latencies = [12, 15, 11, 300, 14, 13, 16, 90, 12, 18, 13, 15, 17, 14, 500, 11, 12, 13, 19, 20]
def pct(xs, p):
    s = sorted(xs)
    idx = min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))
    return s[idx]
for p in [50, 90, 95, 99]:
    print(f"p{p}: {pct(latencies, p)}ms")
mean = sum(latencies) / len(latencies)
print(f"mean {mean:.1f} over {len(latencies)} samples; outliers {[x for x in latencies if x > 3 * mean]}")
