items = ["b", "a", "b", "c", "a", "d"]
seen = set()
out = []
for it in items:
    if it not in seen:
        seen.add(it)
        out.append(it)
print(out)
print(list({k: None for k in items}))
print(sorted(set(items)), len(set(items)))
