budget = 1000
requests = [("ops", 300), ("dev", 450), ("qa", 200), ("design", 150)]
total_req = sum(r for team, r in requests)
scale = min(1.0, budget / total_req)
alloc = {team: int(req * scale) for team, req in requests}
left = budget - sum(alloc.values())
for team, req in sorted(requests, key=lambda tr: -tr[1]):
    if left <= 0:
        break
    alloc[team] += 1
    left -= 1
print(alloc, sum(alloc.values()))
print(f"scale={scale:.4f}")
