xs = [4, 1, 3]
print(len(xs), sum(xs), min(xs), max(xs), sorted(xs), list(reversed(xs)))
print(any(x > 3 for x in xs), all(x > 0 for x in xs), any([]), all([]))
print(list(enumerate(xs)), list(enumerate(xs, 10)))
print(list(zip(xs, "abc", [True, False])), list(zip([1, 2, 3], [9])))
print(sum([[1], [2, 3]], []), sum([0.5, 0.25], 10))
