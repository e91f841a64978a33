rows = [{"id": i, "tags": ["t" + str(j) for j in range(i % 3)]} for i in range(6)]
print(rows)
print([r["id"] for r in rows if r["tags"] if r["id"] > 1])
print({t for r in rows for t in r["tags"]} == {"t0", "t1"})
print([(r["id"], t) for r in rows for t in r["tags"] if t != "t0"])
