def risky(x):
    print("handling", x)
    return 12 // x
results = sum(risky(x) for x in [3, 2, 0, 4])
print(results)
