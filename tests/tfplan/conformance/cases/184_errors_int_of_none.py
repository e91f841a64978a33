row = {"qty": "3", "price": None}
print(int(row["qty"]))
print(int(row["price"]))
