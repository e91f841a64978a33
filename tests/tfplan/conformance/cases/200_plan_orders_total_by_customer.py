orders = [
    {"id": 1, "customer": "acme", "amount": 120.5, "status": "paid"},
    {"id": 2, "customer": "globex", "amount": 75.0, "status": "paid"},
    {"id": 3, "customer": "acme", "amount": 30.25, "status": "refunded"},
    {"id": 4, "customer": "initech", "amount": 200.0, "status": "paid"},
    {"id": 5, "customer": "acme", "amount": 49.75, "status": "paid"},
]
totals = {}
for o in orders:
    if o["status"] != "paid":
        continue
    totals[o["customer"]] = totals.get(o["customer"], 0) + o["amount"]
for name, amt in sorted(totals.items(), key=lambda kv: -kv[1]):
    print(f"{name:<10}{amt:>10.2f}")
print("grand total", sum(totals.values()))
