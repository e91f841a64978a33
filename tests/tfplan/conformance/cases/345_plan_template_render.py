template = "Dear {name}, your order #{order} of {count} item(s) totals {total:.2f} {cur}."
orders = [
    {"name": "Ann", "order": 1001, "count": 2, "total": 39.5, "cur": "EUR"},
    {"name": "Bo", "order": 1002, "count": 1, "total": 5.0, "cur": "USD"},
]
for o in orders:
    print(template.format(**o))
print(template.format(name="X", order=0, count=0, total=0, cur="-").upper())
