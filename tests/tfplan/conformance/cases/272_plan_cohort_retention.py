signups = {"u1": 1, "u2": 1, "u3": 2, "u4": 2, "u5": 2, "u6": 3}
activity = [("u1", 1), ("u1", 2), ("u2", 3), ("u3", 2), ("u3", 3), ("u4", 4), ("u6", 3), ("u1", 4)]
cohorts = {}
for u, wk in signups.items():
    cohorts.setdefault(wk, set()).add(u)
for wk in sorted(cohorts):
    members = cohorts[wk]
    row = []
    for offset in range(3):
        active = {u for u, w in activity if w == wk + offset and u in members}
        row.append(f"{len(active) / len(members):4.0%}")
    print(f"week {wk} (n={len(members)}):", " ".join(row))
