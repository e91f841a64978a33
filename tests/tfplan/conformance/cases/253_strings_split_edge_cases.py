print("".split(), "".split(","), " ".split(" "), "a  b".split(" "))
print("a,b,c".split(",", 0), "a,b,c".split(",", -1), "x".split("x"))
print("ab".join([]), "-".join("abc"), "a\tb  c\n".split())
print("  x  ".strip(" x"), "xxhixx".strip("x"), "www.site.com".lstrip("w."), "file.txt".rstrip(".txt"))
