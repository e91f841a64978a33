def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)
print([fact(n) for n in range(8)], fact(25))
print([fib(n) for n in range(15)])
