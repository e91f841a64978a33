users = [
    {"name": "ann", "age": 31, "email": "ann@x.io"},
    {"name": "bob", "age": 17, "email": "bob@x.io"},
    {"name": "cy", "age": 44, "email": "cy-at-x.io"},
]
def validate(u):
    if "@" not in u["email"]:
        raise ValueError(f"invalid email for {u['name']}: {u['email']}")
    return u["age"] >= 18
for u in users:
    print(u["name"], "adult" if validate(u) else "minor")
print("all valid")
