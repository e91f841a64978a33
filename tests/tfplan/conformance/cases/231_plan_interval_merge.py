intervals = [(1, 3), (8, 10), (2, 6), (15, 18), (17, 20), (6, 7)]
merged = []
for s, e in sorted(intervals):
    if merged and s <= merged[-1][1]:
        merged[-1] = (merged[-1][0], max(merged[-1][1], e))
    else:
        merged.append((s, e))
print(merged)
print("covered", sum(e - s for s, e in merged))
gaps = [(a[1], b[0]) for a, b in zip(merged, merged[1:])]
print("gaps", gaps)
