rows = [
    {"name": "east", "count": 12, "total": 1534.5},
    {"name": "west", "count": 7, "total": 980.0},
    {"name": "north", "count": 140, "total": 20100.75},
]
print(f"{'region':<8}{'n':>5}{'total':>12}{'avg':>9}")
print("-" * 34)
for r in rows:
    avg = r["total"] / r["count"]
    print(f"{r['name']:<8}{r['count']:>5}{r['total']:>12,.2f}{avg:>9.2f}")
print("-" * 34)
print(f"{'sum':<8}{sum(r['count'] for r in rows):>5}{sum(r['total'] for r in rows):>12,.2f}")
