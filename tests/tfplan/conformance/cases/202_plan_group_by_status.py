tickets = [
    {"id": "T1", "status": "open", "priority": 2},
    {"id": "T2", "status": "closed", "priority": 1},
    {"id": "T3", "status": "open", "priority": 1},
    {"id": "T4", "status": "pending", "priority": 3},
    {"id": "T5", "status": "open", "priority": 3},
]
groups = {}
for t in tickets:
    groups.setdefault(t["status"], []).append(t["id"])
print(groups)
for status in sorted(groups):
    ids = groups[status]
    print(f"{status}: {len(ids)} -> {', '.join(ids)}")
urgent = [t["id"] for t in tickets if t["status"] == "open" and t["priority"] >= 2]
print("urgent", urgent)
