def load(x):
    print("load", x)
    return x * 2
for i, v in enumerate(map(load, [1, 2, 3, 4])):
    if v >= 4:
        print("stop at", i, v)
        break
pending = filter(lambda x: load(x) > 4, [1, 2, 3, 4])
for p in pending:
    print("first big", p)
    break
