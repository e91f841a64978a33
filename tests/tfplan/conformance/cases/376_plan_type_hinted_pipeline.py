def parse_row(line: str) -> dict:
    name, qty, price = line.split(";")
    return {"name": name.strip(), "qty": int(qty), "price": float(price)}
def line_total(row: dict) -> float:
    return row["qty"] * row["price"]
raw: str = "apple; 3; 0.5\npear;2;0.75\n  fig ;10;0.2"
rows: list = [parse_row(ln) for ln in raw.splitlines()]
for r in rows:
    print(f"{r['name']:<6}{line_total(r):>6.2f}")
print("sum", round(sum(line_total(r) for r in rows), 2))
