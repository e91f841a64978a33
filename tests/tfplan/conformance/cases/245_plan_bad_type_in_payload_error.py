payload = {"items": [{"qty": 2, "price": 3.0}, {"qty": "4", "price": 1.5}]}
total = 0
for i, it in enumerate(payload["items"]):
    line = it["qty"] * it["price"]
    total += line
    print(i, line, total)
