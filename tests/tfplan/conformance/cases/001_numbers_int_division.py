print(7 // 2, -7 // 2, 7 // -2, -7 // -2)
print(7 % 3, -7 % 3, 7 % -3, -7 % -3)
print(divmod(17, 5), divmod(-17, 5), divmod(17, -5))
print(0 // 5, 0 % 5)
