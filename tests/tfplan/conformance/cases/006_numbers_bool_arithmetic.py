print(True + True, True * 10, False - 1, True / 2)
print(sum([True, False, True, True]))
print(int(True), float(False), -True)
print(True == 1, False == 0, True is True)
