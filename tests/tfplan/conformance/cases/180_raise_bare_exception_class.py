def check(n):
    if n > 2:
        raise IndexError
    return n
print([check(i) for i in range(3)])
print(check(3))
