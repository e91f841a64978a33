calls = []
def positive(x):
    calls.append(x)
    return x > 0
print(all(positive(x) for x in [3, -1, 5, 7]), calls)
calls.clear()
print(any(positive(x) for x in [-3, -1, 5, 7]), calls)
calls.clear()
print(min(x for x in [4, 2, 8] if positive(x)), calls)
