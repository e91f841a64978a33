def noisy(tag, i):
    print("pull", tag, i)
    return i
a = (noisy("a", i) for i in range(3))
b = (noisy("b", i) for i in range(1))
print(list(zip(a, b)))
print("left in a:", list(a))
