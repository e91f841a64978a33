path = "a/b/c"
print(path.index("/"))
print(path.index("c"))
print(path.index("d"))
