stock = {"a": 1, "b": 0, "c": 2}
for k in stock:
    print("checking", k)
    if stock[k] == 0:
        del stock[k]
print(stock)
