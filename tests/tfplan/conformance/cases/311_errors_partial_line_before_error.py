for i in range(3):
    print(i, end=" ")
print("|", end="")
print(10 // (i - 2))
