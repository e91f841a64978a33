for i in range(10 ** 9):
    if i * i > 50:
        break
print("first i with i*i > 50:", i)
r = range(0, 10 ** 12, 7)
print(len(r), r[-1], 10 ** 11 in r, 700 in r)
