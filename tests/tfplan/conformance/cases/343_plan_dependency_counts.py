packages = {
    "app": ["web", "db", "log"],
    "web": ["http", "log"],
    "db": ["log", "pool"],
    "http": [],
    "log": [],
    "pool": ["log"],
}
def all_deps(name, acc):
    for d in packages[name]:
        if d not in acc:
            acc.add(d)
            all_deps(d, acc)
    return acc
for p in packages:
    deps = sorted(all_deps(p, set()))
    print(f"{p:<5} {len(deps)} {deps}")
used_by = {p: sorted(q for q in packages if p in packages[q]) for p in packages}
print(used_by["log"])
