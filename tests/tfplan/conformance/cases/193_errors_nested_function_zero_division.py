def mean(xs):
    return sum(xs) / len(xs)
def report(groups):
    for name, xs in groups:
        print(name, round(mean(xs), 2))
report([("a", [1, 2, 4]), ("b", [5]), ("c", [])])
