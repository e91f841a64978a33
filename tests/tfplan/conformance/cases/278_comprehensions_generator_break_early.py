def expensive(x):
    print("compute", x)
    return x * x
for sq in (expensive(n) for n in range(10)):
    if sq > 5:
        print("first square above 5:", sq)
        break
found = [n for n in filter(lambda n: expensive(n) > 10, range(3, 8))]
print(found)
