limit = 100
flags = [True] * (limit + 1)
flags[0] = flags[1] = False
p = 2
while p * p <= limit:
    if flags[p]:
        for m in range(p * p, limit + 1, p):
            flags[m] = False
    p += 1
primes = [i for i, ok in enumerate(flags) if ok]
print(primes)
print(len(primes), sum(primes))
