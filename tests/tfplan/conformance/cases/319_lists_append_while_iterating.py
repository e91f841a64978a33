xs = [1, 2, 3]
for x in xs:
    if x < 3:
        xs.append(x + 10)
    print("visit", x)
print(xs)
