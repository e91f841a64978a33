orders = [
    {"id": 1, "amount": 10.0, "currency": "EUR"},
    {"id": 2, "amount": 5.5, "currency": "USD"},
    {"id": 3, "amount": 7.25},
]
rates = {"EUR": 1.0, "USD": 0.9}
total = 0
for o in orders:
    eur = o["amount"] * rates[o["currency"]]
    total += eur
    print(f"order {o['id']}: {eur:.2f} EUR")
print(total)
