def helper(x):
    return x + 1
def run(helper, value):
    return helper(value)
print(run(lambda v: v * 100, 2), helper(2))
def outer(len):
    return len * 2
print(outer(4), len("abc"))
