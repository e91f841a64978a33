def memoize(fn):
    cache = {}
    calls = [0]
    def wrapped(n):
        if n not in cache:
            calls[0] += 1
            cache[n] = fn(n)
        return cache[n]
    return wrapped, calls

def slow_square(n):
    return n * n

sq, calls = memoize(slow_square)
print([sq(n) for n in [2, 3, 2, 2, 3, 4]], calls[0])
