print(abs(-3), abs(3.5), abs(-0.0), abs(True))
print(min(3, 1, 2), max(3, 1, 2), min([4, -4, 2]), max([1.5, 2, -3]))
print(min(3, 3.0), max(1, True))
print(min([], default=0), max((), default="none"))
