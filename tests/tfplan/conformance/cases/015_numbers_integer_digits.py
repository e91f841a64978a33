n = 9876543210
digits = []
while n > 0:
    n, d = divmod(n, 10)
    digits.append(d)
print(digits)
print(sum(digits), len(digits))
print(int("".join(str(d) for d in digits)))
