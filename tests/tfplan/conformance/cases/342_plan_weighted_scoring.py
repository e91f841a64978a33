candidates = [
    {"name": "svc-a", "latency": 120, "cost": 3.0, "uptime": 0.999},
    {"name": "svc-b", "latency": 80, "cost": 5.5, "uptime": 0.995},
    {"name": "svc-c", "latency": 200, "cost": 1.0, "uptime": 0.98},
]
weights = {"latency": -0.01, "cost": -0.5, "uptime": 50}
def score(c):
    return round(sum(weights[k] * c[k] for k in weights), 3)
scored = sorted(((score(c), c["name"]) for c in candidates), reverse=True)
for s, n in scored:
    print(f"{n}: {s:.3f}")
print("pick:", scored[0][1])
