print("ab" * -1 == "", "ab" * 0, [1] * -3, "x" * True, "-" * False + "|")
print(("a", "b") * 2, 2 * [None])
