d = {"a": 1}
print(d.get("a"))
d.add("b")
