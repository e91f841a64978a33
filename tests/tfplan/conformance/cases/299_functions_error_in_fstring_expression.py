rows = [{"n": "a", "v": 2}, {"n": "b"}]
for r in rows:
    print(f"{r['n']}: {r['v'] * 2}")
