print(round(-0.5), round(-0.5, 0), round(0.5, 0), round(-1.5), round(1.5))
print(-0.0, str(-0.0), int(-0.0), 0.0 == -0.0, abs(-0.0))
print(round(5, 1), round(5.0, 1), round(123.456, -1), round(-123.456, 1))
print(-7 % 2.5, 7 % -2.5, -0.0 * 5)
