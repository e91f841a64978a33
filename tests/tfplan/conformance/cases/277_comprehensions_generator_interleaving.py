def produce(x):
    print("produce", x)
    return x * 10
for v in (produce(x) for x in [1, 2, 3]):
    print("consume", v)
total = 0
for v in map(produce, [4, 5]):
    total += v
    print("running", total)
