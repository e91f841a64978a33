limit = 3
nums = [5, 1, 4, 2, 3]
small = [n for n in nums if n < limit]
print(small)
def make(th):
    return [n * th for n in nums if n > th]
print(make(2), make(4))
pairs = {n: [m for m in nums if m < n] for n in nums}
print(pairs)
