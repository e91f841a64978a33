print("{0}-{1}".format("a", "b"))
print("{0}-{2}".format("a", "b"))
