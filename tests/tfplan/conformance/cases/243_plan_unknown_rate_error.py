rates = {"EUR": 1.0, "USD": 0.92}
def convert(amount, cur):
    return round(amount * rates[cur], 2)
def summarize(rows):
    out = []
    for r in rows:
        out.append(convert(r["amount"], r["cur"]))
        print("converted", r["amount"], r["cur"], out[-1])
    return out
summarize([{"amount": 10, "cur": "USD"}, {"amount": 3, "cur": "GBP"}])
