print(round(2.5), round(3.5), round(0.5), round(-2.5))
print(round(2.675, 2), round(1.23456, 3), round(1234.5678, -2))
print(round(7), round(7.0), round(-0.4))
print(round(12345, -2), round(12355, -1))
