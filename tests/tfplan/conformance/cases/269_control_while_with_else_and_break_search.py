def first_square_above(n):
    k = 0
    while k * k <= n:
        k += 1
    else:
        return k * k
print(first_square_above(10), first_square_above(16), first_square_above(0))
nums = [7, 11, 13, 21]
i = 0
while i < len(nums):
    if nums[i] % 3 == 0:
        print("divisible by 3:", nums[i])
        break
    i += 1
else:
    print("none divisible")
