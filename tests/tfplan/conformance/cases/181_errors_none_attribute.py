data = {"user": None}
print(data.get("user"))
print(data["user"].upper())
