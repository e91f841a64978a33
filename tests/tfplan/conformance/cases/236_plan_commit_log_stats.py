commits = [
    {"author": "ann", "files": ["a.py", "b.py"], "added": 40, "removed": 5},
    {"author": "bob", "files": ["a.py"], "added": 3, "removed": 30},
    {"author": "ann", "files": ["c.md"], "added": 10, "removed": 0},
    {"author": "cy", "files": ["b.py", "c.md", "d.py"], "added": 120, "removed": 60},
]
per_author = {}
touched = {}
for c in commits:
    s = per_author.setdefault(c["author"], [0, 0, 0])
    s[0] += 1
    s[1] += c["added"]
    s[2] += c["removed"]
    for f in c["files"]:
        touched[f] = touched.get(f, 0) + 1
for a, (n, add, rem) in sorted(per_author.items(), key=lambda kv: kv[1][1] - kv[1][2], reverse=True):
    print(f"{a}: {n} commits, +{add}/-{rem}, net {add - rem:+d}")
print("hot files", [f for f, n in sorted(touched.items()) if n > 1])
