xs = [1, 2, 3, 4, 5, 6]
print(list(map(lambda x: x * x, xs)))
print(list(filter(lambda x: x % 2 == 0, xs)))
print(list(map(str, xs)), list(map(int, ["7", "8"])))
print(list(map(lambda a, b: a + b, [1, 2], [10, 20, 30])))
print(list(filter(None, [0, 1, "", "a", None, [], [0]])))
print(sorted(map(abs, [-3, 2, -1])))
