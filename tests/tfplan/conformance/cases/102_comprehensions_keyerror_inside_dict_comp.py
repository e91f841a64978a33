users = [{"name": "a", "age": 3}, {"name": "b"}]
print({u["name"]: u.get("age") for u in users})
ages = {u["name"]: u["age"] for u in users}
print(ages)
