total = 120
parts = [4, 3, 0, 2]
for p in parts:
    print("share", total // p)
print("unreachable")
