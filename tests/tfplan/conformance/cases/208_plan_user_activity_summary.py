events = [
    {"user": "u1", "action": "login", "t": 1},
    {"user": "u2", "action": "login", "t": 2},
    {"user": "u1", "action": "view", "t": 3},
    {"user": "u1", "action": "buy", "t": 7},
    {"user": "u2", "action": "view", "t": 8},
    {"user": "u3", "action": "login", "t": 9},
    {"user": "u2", "action": "logout", "t": 12},
]
per_user = {}
for e in events:
    u = per_user.setdefault(e["user"], {"actions": [], "first": e["t"], "last": e["t"]})
    u["actions"].append(e["action"])
    u["last"] = e["t"]
for user, info in per_user.items():
    span = info["last"] - info["first"]
    print(user, len(info["actions"]), span, "->".join(info["actions"]))
buyers = [u for u, info in per_user.items() if "buy" in info["actions"]]
print("buyers", buyers)
