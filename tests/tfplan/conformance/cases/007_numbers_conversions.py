print(int("42"), int(" -17 "), int(3.99), int(-3.99), int("ff", 16), int("101", 2))
print(float("1.5"), float("1e3"), float(" 2 "), float(7))
print(str(12), str(1.50), str(-0.25), bool(0), bool(0.0), bool(3))
print(int("0o17", 0), int("0x1F", 0), int("1_000"))
