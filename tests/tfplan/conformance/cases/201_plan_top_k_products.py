sales = [
    {"sku": "A1", "units": 5, "price": 9.99},
    {"sku": "B2", "units": 1, "price": 199.0},
    {"sku": "C3", "units": 20, "price": 2.5},
    {"sku": "A1", "units": 3, "price": 9.99},
    {"sku": "D4", "units": 7, "price": 15.0},
    {"sku": "C3", "units": 4, "price": 2.5},
]
revenue = {}
for s in sales:
    revenue[s["sku"]] = revenue.get(s["sku"], 0) + s["units"] * s["price"]
k = 3
top = sorted(revenue.items(), key=lambda kv: kv[1], reverse=True)[:k]
for rank, (sku, rev) in enumerate(top, start=1):
    print(f"#{rank} {sku}: {rev:.2f}")
print([sku for sku, r in top])
