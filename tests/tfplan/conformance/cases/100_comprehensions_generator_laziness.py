log = []
def check(x):
    log.append(x)
    return x > 2
print(any(check(x) for x in [1, 3, 5, 7]))
print(log)
log.clear()
print(all(check(x) for x in [5, 1, 9]))
print(log)
gen = (x * 10 for x in [1, 2])
print(list(gen), list(gen))
