def flatten(x):
    if isinstance(x, list):
        out = []
        for item in x:
            out.extend(flatten(item))
        return out
    return [x]
print(flatten([1, [2, [3, [4, []]], 5], [[6]]]))
def depth(x):
    if not isinstance(x, list) or not x:
        return 0 if not isinstance(x, list) else 1
    return 1 + max(depth(i) for i in x)
print(depth([1, [2, [3]]]), depth([]), depth(5))
