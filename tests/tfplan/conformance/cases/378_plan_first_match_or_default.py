users = [{"id": 1, "role": "viewer"}, {"id": 2, "role": "admin"}, {"id": 3, "role": "admin"}]
first_admin = None
for u in users:
    if u["role"] == "admin":
        first_admin = u
        break
print(first_admin)
owner = [u for u in users if u["role"] == "owner"]
print(owner[0] if owner else "no owner")
by_id = {u["id"]: u for u in users}
print(by_id.get(3, {}).get("role", "?"), by_id.get(9, {}).get("role", "?"))
