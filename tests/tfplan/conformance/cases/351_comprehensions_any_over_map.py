def probe(x):
    print("probe", x)
    return x > 1
print(any(map(probe, [0, 2, 5])))
print(all(map(probe, [3, 0, 9])))
