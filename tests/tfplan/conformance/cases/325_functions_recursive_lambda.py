fact = lambda n: 1 if n < 2 else n * fact(n - 1)
print(fact(10))
fib = lambda n: n if n < 2 else fib(n - 1) + fib(n - 2)
print([fib(i) for i in range(12)])
