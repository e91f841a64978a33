out = []
for i in range(1, 21):
    s = ""
    if i % 3 == 0:
        s += "Fizz"
    if i % 5 == 0:
        s += "Buzz"
    out.append(s or str(i))
print(" ".join(out))
