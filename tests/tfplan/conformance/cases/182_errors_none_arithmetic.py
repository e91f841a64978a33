def price_of(item):
    if item == "known":
        return 10
total = price_of("known")
print(total)
total += price_of("unknown")
print(total)
