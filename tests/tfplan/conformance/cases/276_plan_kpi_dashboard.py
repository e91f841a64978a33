metrics = {
    "signups": {"cur": 1320, "prev": 1200, "good": "up"},
    "churn_pct": {"cur": 2.9, "prev": 3.4, "good": "down"},
    "latency_ms": {"cur": 240, "prev": 210, "good": "down"},
    "revenue": {"cur": 98000.0, "prev": 101500.0, "good": "up"},
}
for name, m in metrics.items():
    delta = (m["cur"] - m["prev"]) / m["prev"]
    improved = (delta > 0) == (m["good"] == "up")
    arrow = "^" if delta > 0 else "v"
    status = "OK " if improved else "BAD"
    print(f"{status} {name:<11} {m['cur']:>10,} {arrow} {abs(delta):6.2%}")
bad = [n for n, m in metrics.items() if ((m["cur"] > m["prev"]) != (m["good"] == "up"))]
print("needs attention:", ", ".join(bad))
