def parse_qty(s):
    return int(s)
def line_total(line):
    return parse_qty(line["qty"]) * line["price"]
def order_total(lines):
    t = 0
    for ln in lines:
        t += line_total(ln)
        print("subtotal", t)
    return t
order_total([{"qty": "2", "price": 5}, {"qty": "x", "price": 1}])
