servers = [
    {"name": "web-1", "rack": "r1", "cpu": [0.2, 0.5, 0.9], "mem_gb": 64},
    {"name": "web-2", "rack": "r1", "cpu": [0.1, 0.1, 0.2], "mem_gb": 64},
    {"name": "db-1", "rack": "r2", "cpu": [0.8, 0.95, 0.9], "mem_gb": 256},
    {"name": "cache-1", "rack": "r2", "cpu": [0.4, 0.3, 0.5], "mem_gb": 128},
]
lines = []
for s in servers:
    avg = sum(s["cpu"]) / len(s["cpu"])
    peak = max(s["cpu"])
    flag = "HOT" if peak > 0.85 else "ok"
    lines.append(f"{s['name']:<8} avg={avg:.0%} peak={peak:.0%} {flag}")
print("\n".join(lines))
by_rack = {}
for s in servers:
    by_rack[s["rack"]] = by_rack.get(s["rack"], 0) + s["mem_gb"]
print(by_rack)
