roles = {"admin": {"read", "write", "delete"}, "editor": {"read", "write"}, "viewer": {"read"}}
users = {"ann": ["admin"], "bob": ["viewer", "editor"], "cy": []}
requests = [("ann", "delete"), ("bob", "write"), ("bob", "delete"), ("cy", "read")]
for user, action in requests:
    perms = set()
    for r in users[user]:
        perms |= roles[r]
    verdict = "ALLOW" if action in perms else "DENY"
    print(f"{verdict:<5} {user} {action} ({', '.join(sorted(perms)) or 'no perms'})")
