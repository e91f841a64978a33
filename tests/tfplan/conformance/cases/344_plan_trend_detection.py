series = {"cpu": [40, 42, 45, 50, 58, 67], "mem": [70, 69, 71, 70, 70, 69], "disk": [90, 85, 80, 76, 71, 65]}
for name, vals in series.items():
    diffs = [b - a for a, b in zip(vals, vals[1:])]
    ups = sum(1 for d in diffs if d > 0)
    downs = sum(1 for d in diffs if d < 0)
    trend = "rising" if ups >= 4 else "falling" if downs >= 4 else "flat"
    print(f"{name:<5} {trend:<8} change={vals[-1] - vals[0]:+d} diffs={diffs}")
