def find(items, name):
    for it in items:
        if it["name"] == name:
            return it
hit = find([{"name": "a", "v": 1}], "a")
print(hit["v"])
miss = find([{"name": "a", "v": 1}], "b")
print(miss["v"])
