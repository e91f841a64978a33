def compute(values):
    totl = 0
    for v in values:
        totl += v
    if totl > 100:
        return total
    return totl
print(compute([1, 2]))
print(compute([60, 70]))
