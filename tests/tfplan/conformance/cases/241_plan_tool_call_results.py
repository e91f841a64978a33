calls = [
    {"tool": "search", "ok": True, "ms": 120, "result": {"hits": 3}},
    {"tool": "fetch", "ok": False, "ms": 3000, "error": "timeout"},
    {"tool": "search", "ok": True, "ms": 80, "result": {"hits": 0}},
    {"tool": "summarize", "ok": True, "ms": 900, "result": {"chars": 512}},
]
summary = {}
for c in calls:
    s = summary.setdefault(c["tool"], {"n": 0, "fail": 0, "ms": 0})
    s["n"] += 1
    s["ms"] += c["ms"]
    if not c["ok"]:
        s["fail"] += 1
for tool, s in summary.items():
    print(f"{tool:<10} calls={s['n']} fail={s['fail']} avg_ms={s['ms'] // s['n']}")
errors = [f"{c['tool']}: {c['error']}" for c in calls if not c["ok"]]
print(errors)
print(sum(c["result"]["hits"] for c in calls if c["tool"] == "search"))
