flags = {"new_ui": {"enabled": True, "rollout": 50, "allow": ["u7"]}, "beta_api": {"enabled": False, "rollout": 100, "allow": []}}
users = ["u1", "u7", "u42", "u99"]
def bucket(uid):
    return sum(ord(c) for c in uid) % 100
def is_on(flag, uid):
    f = flags[flag]
    if not f["enabled"]:
        return False
    return uid in f["allow"] or bucket(uid) < f["rollout"]
for u in users:
    print(u, bucket(u), {name: is_on(name, u) for name in flags})
