logs = """2024-01-01 10:00:01 INFO start service=api
2024-01-01 10:00:05 WARN slow request ms=850
2024-01-01 10:00:09 ERROR db timeout ms=5000
2024-01-01 10:01:00 INFO request ms=120
2024-01-01 10:01:30 ERROR upstream 502 ms=30"""
levels = {}
durations = []
for line in logs.splitlines():
    parts = line.split()
    level = parts[2]
    levels[level] = levels.get(level, 0) + 1
    for p in parts[3:]:
        if p.startswith("ms="):
            durations.append(int(p[3:]))
print(levels)
print("max ms", max(durations), "avg ms", sum(durations) / len(durations))
errors = [ln.split(" ", 3)[3] for ln in logs.splitlines() if " ERROR " in ln]
print(errors)
