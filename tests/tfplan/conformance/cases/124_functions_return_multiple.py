def stats(xs):
    n = len(xs)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / n
    return n, mean, var

n, mean, var = stats([2, 4, 4, 4, 5, 5, 7, 9])
print(n, mean, var)
res = stats([1, 2])
print(res, res[1])
def nothing():
    return
print(nothing())
