n = 27
steps = 0
while n != 1:
    n = n // 2 if n % 2 == 0 else 3 * n + 1
    steps += 1
else:
    print("reached 1 after", steps)
k = 0
while k < 10:
    k += 3
    if k == 6:
        break
else:
    print("no break")
print("k", k)
