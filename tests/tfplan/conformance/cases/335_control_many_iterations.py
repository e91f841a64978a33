total = 0
for i in range(20000):
    if i % 3 == 0 or i % 5 == 0:
        total += i
print(total)
k = 0
steps = 0
while k < 10000:
    k += 7
    steps += 1
print(k, steps)
