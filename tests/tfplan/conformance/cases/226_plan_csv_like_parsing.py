csv_text = "name,qty,price\nwidget,4,2.50\ngadget,1,10.00\ndoohickey,10,0.99\n"
lines = csv_text.strip().split("\n")
header = lines[0].split(",")
rows = [dict(zip(header, ln.split(","))) for ln in lines[1:]]
for r in rows:
    r["qty"] = int(r["qty"])
    r["price"] = float(r["price"])
    r["total"] = round(r["qty"] * r["price"], 2)
print(rows)
print(max(rows, key=lambda r: r["total"])["name"], sum(r["total"] for r in rows))
