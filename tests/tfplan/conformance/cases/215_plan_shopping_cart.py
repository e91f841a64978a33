cart = [
    {"sku": "tea", "qty": 2, "unit": 4.5},
    {"sku": "mug", "qty": 1, "unit": 12.0},
    {"sku": "honey", "qty": 3, "unit": 6.25},
]
coupons = {"tea": 0.10, "honey": 0.20}
subtotal = 0
lines = []
for item in cart:
    gross = item["qty"] * item["unit"]
    disc = gross * coupons.get(item["sku"], 0)
    net = gross - disc
    subtotal += net
    lines.append(f"{item['sku']:<6} x{item['qty']} {gross:6.2f} -{disc:5.2f} = {net:6.2f}")
tax = round(subtotal * 0.08, 2)
print("\n".join(lines))
print(f"subtotal {subtotal:.2f} tax {tax:.2f} total {subtotal + tax:.2f}")
