payload = {
    "data": {
        "items": [
            {"id": 1, "attrs": {"color": "red", "size": "M"}, "stock": [{"wh": "a", "n": 3}, {"wh": "b", "n": 0}]},
            {"id": 2, "attrs": {"color": "blue"}, "stock": []},
            {"id": 3, "attrs": {"color": "red", "size": "L"}, "stock": [{"wh": "a", "n": 7}]},
        ]
    },
    "meta": {"page": 1, "total": 3},
}
items = payload["data"]["items"]
for it in items:
    size = it["attrs"].get("size", "?")
    n = sum(s["n"] for s in it["stock"])
    print(it["id"], it["attrs"]["color"], size, n)
red_stock = sum(s["n"] for it in items if it["attrs"]["color"] == "red" for s in it["stock"])
print("red stock", red_stock, "pages", payload["meta"]["total"] // 2 + 1)
