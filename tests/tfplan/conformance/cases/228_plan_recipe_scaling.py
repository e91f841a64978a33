recipe = {"serves": 4, "items": [("flour", 500, "g"), ("eggs", 3, "pcs"), ("milk", 0.75, "l")]}
def scale(recipe, people):
    f = people / recipe["serves"]
    out = []
    for name, qty, unit in recipe["items"]:
        q = qty * f
        if unit == "pcs":
            q = max(1, round(q))
        out.append(f"{name}: {q:g} {unit}")
    return out
for n in [2, 6, 1]:
    print(n, "->", "; ".join(scale(recipe, n)))
