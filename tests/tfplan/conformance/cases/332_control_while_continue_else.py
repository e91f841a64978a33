n = 0
odd = []
while n < 10:
    n += 1
    if n % 2 == 0:
        continue
    odd.append(n)
else:
    print("loop finished normally", n)
print(odd)
