print(True + 0.5, True * "ab", [False] * 2, -False, ~True, True << 3)
print(sum([0.5, True, 2]), max(True, 0.5), min(False, -0.0))
print(divmod(True, 2), True // 2, True % 2, 3 ** True)
