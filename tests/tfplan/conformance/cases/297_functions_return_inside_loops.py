def find_pair(nums, target):
    seen = {}
    for i, n in enumerate(nums):
        if target - n in seen:
            return seen[target - n], i
        seen[n] = i
    return None
print(find_pair([2, 7, 11, 15], 9), find_pair([3, 2, 4], 6), find_pair([1], 5))
def count_until(limit):
    n = 0
    while True:
        n += 1
        if n * n > limit:
            return n
print(count_until(50))
