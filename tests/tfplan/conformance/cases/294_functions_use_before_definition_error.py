print("starting")
print(helper(2))
def helper(x):
    return x * 2
