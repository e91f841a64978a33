print(int("ff", 16), int("12", 3))
print(int("12", 2))
