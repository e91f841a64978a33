records = [
    {"id": 3, "email": "X@Mail.com ", "ts": 5},
    {"id": 4, "email": "y@mail.com", "ts": 2},
    {"id": 5, "email": "x@mail.com", "ts": 9},
    {"id": 6, "email": "  y@MAIL.com", "ts": 1},
]
latest = {}
for r in records:
    key = r["email"].strip().lower()
    if key not in latest or r["ts"] > latest[key]["ts"]:
        latest[key] = r
for key, r in latest.items():
    print(key, r["id"], r["ts"])
print("removed", len(records) - len(latest))
