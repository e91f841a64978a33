tasks = [
    {"title": "write docs", "prio": 2, "due": "2024-05-02", "done": False},
    {"title": "fix bug", "prio": 1, "due": "2024-05-01", "done": False},
    {"title": "deploy", "prio": 1, "due": "2024-04-30", "done": True},
    {"title": "review", "prio": 2, "due": "2024-04-29", "done": False},
    {"title": "plan sprint", "prio": 3, "due": "2024-05-01", "done": False},
]
todo = sorted((t for t in tasks if not t["done"]), key=lambda t: (t["prio"], t["due"], t["title"]))
for n, t in enumerate(todo, 1):
    print(f"{n}. [P{t['prio']}] {t['title']:<12} due {t['due']}")
print(f"{sum(t['done'] for t in tasks)}/{len(tasks)} done")
