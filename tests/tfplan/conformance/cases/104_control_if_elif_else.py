def classify(n):
    if n < 0:
        return "neg"
    elif n == 0:
        return "zero"
    elif n < 10:
        return "small"
    else:
        return "big"

print([classify(n) for n in [-5, 0, 3, 10, 99]])
x = 7
if x > 5:
    if x % 2:
        print("odd big")
    else:
        print("even big")
if not []:
    print("empty list is falsy")
