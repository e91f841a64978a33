customers = {101: {"name": "Ann", "tier": "gold"}, 102: {"name": "Bo", "tier": "silver"}, 103: {"name": "Cy", "tier": "gold"}}
orders = [
    {"oid": "o1", "cid": 101, "total": 50},
    {"oid": "o2", "cid": 103, "total": 125},
    {"oid": "o3", "cid": 101, "total": 80},
    {"oid": "o4", "cid": 102, "total": 20},
]
by_tier = {}
for o in orders:
    c = customers[o["cid"]]
    by_tier.setdefault(c["tier"], []).append((c["name"], o["total"]))
for tier, rows in sorted(by_tier.items()):
    amount = sum(t for n, t in rows)
    names = sorted({n for n, t in rows})
    print(tier, amount, names)
