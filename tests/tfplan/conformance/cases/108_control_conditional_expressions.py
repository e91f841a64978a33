for n in [0, 1, 2, 15]:
    label = "zero" if n == 0 else "one" if n == 1 else "many"
    fizz = "FizzBuzz" if n % 15 == 0 else "Fizz" if n % 3 == 0 else "Buzz" if n % 5 == 0 else str(n)
    print(n, label, fizz)
x = None
print(x if x is not None else "default", (x or "fallback"))
