for word in ["a", "abc", "abcdef"]:
    print("[" + word.ljust(5) + "]", "[" + word.rjust(5, ".") + "]", "[" + word.center(7, "*") + "]")
print("42".zfill(5), "-42".zfill(5), "abc".zfill(2))
