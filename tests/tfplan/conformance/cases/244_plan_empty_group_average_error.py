groups = {"web": [120, 80, 100], "db": [300], "batch": []}
for name in ["web", "db", "batch"]:
    vals = groups[name]
    avg = sum(vals) / len(vals)
    print(f"{name}: avg {avg:.1f}")
