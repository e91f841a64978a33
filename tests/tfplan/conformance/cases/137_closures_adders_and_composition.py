def adder(n):
    return lambda x: x + n
def compose(f, g):
    return lambda x: f(g(x))
add5 = adder(5)
times3 = lambda x: x * 3
print(add5(1), compose(add5, times3)(2), compose(times3, add5)(2))
fns = [adder(i) for i in range(4)]
print([f(10) for f in fns])
