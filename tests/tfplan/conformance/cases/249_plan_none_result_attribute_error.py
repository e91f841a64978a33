def find_user(users, name):
    for u in users:
        if u["name"] == name:
            return u
users = [{"name": "ann", "email": "ANN@X.IO"}]
print(find_user(users, "ann")["email"].lower())
missing = find_user(users, "zed")
print(missing.get("email"))
