stock = {"apple": 5, "pear": 0, "fig": 12}
for k in stock:
    print(k, stock[k])
for k, v in stock.items():
    if v == 0:
        print("out of", k)
print(sum(stock.values()), max(stock.values()), "fig" in stock, 12 in stock)
print(sorted(stock, key=stock.get), sorted(stock.items(), key=lambda kv: kv[1], reverse=True))
