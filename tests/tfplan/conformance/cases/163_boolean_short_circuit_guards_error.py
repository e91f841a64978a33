def safe_div(a, b):
    return b != 0 and a / b
print(safe_div(4, 2), safe_div(4, 0))
items = {"a": 1}
print("b" in items and items["b"] > 0)
print(items.get("b") or items["b"])
