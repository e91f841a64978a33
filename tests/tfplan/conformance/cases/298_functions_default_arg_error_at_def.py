print("defining")
def f(x, scale=10 // 0):
    return x * scale
print(f(1))
