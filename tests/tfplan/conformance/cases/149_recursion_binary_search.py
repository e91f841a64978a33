def bsearch(xs, target, lo, hi):
    if lo > hi:
        return -1
    mid = (lo + hi) // 2
    if xs[mid] == target:
        return mid
    if xs[mid] < target:
        return bsearch(xs, target, mid + 1, hi)
    return bsearch(xs, target, lo, mid - 1)
data = list(range(0, 100, 7))
print([bsearch(data, t, 0, len(data) - 1) for t in [0, 7, 49, 98, 50]])
