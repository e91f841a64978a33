scores = [55, 67, 72, 88, 91, 45, 78, 83, 69, 99, 62, 74]
buckets = {}
for s in scores:
    b = s // 10 * 10
    buckets[b] = buckets.get(b, 0) + 1
for b in range(40, 100, 10):
    n = buckets.get(b, 0)
    print(f"{b:>3}-{b + 9:<3} {'#' * n} {n}")
print("mean", round(sum(scores) / len(scores), 1))
