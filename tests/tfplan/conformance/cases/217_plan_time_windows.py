points = [(0, 5), (3, 2), (7, 9), (12, 1), (14, 4), (15, 6), (29, 3), (30, 8)]
window = 10
buckets = {}
for t, v in points:
    start = t // window * window
    b = buckets.setdefault(start, {"n": 0, "sum": 0, "max": None})
    b["n"] += 1
    b["sum"] += v
    b["max"] = v if b["max"] is None else max(b["max"], v)
for start in sorted(buckets):
    b = buckets[start]
    print(f"[{start},{start + window}) n={b['n']} avg={b['sum'] / b['n']:.2f} max={b['max']}")
