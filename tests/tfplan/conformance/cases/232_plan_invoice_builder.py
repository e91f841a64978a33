client = {"name": "Acme Corp", "vat": 0.2}
lines = [("Consulting", 12, 150.0), ("Travel", 1, 420.5), ("Licenses", 3, 99.99)]
width = 44
out = [client["name"].upper().center(width, "="), ""]
net = 0.0
for desc, qty, price in lines:
    amount = qty * price
    net += amount
    out.append(f"{desc:<16}{qty:>4} x {price:>8.2f} = {amount:>9.2f}")
vat = net * client["vat"]
out.append("-" * width)
out.append(f"{'Net':<32}{net:>12.2f}")
out.append(f"{'VAT ' + str(int(client['vat'] * 100)) + '%':<32}{vat:>12.2f}")
out.append(f"{'Total':<32}{net + vat:>12.2f}")
print("\n".join(out))
