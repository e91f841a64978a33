f = frozenset([3, 1, 2, 3])
print(sorted(f), len(f), 2 in f)
groups = {f: "abc", frozenset([9]): "z"}
print(groups[frozenset([1, 2, 3])])
print(f | {4} == {1, 2, 3, 4}, f & {1, 5})
