print("%s and %s" % ("a", "b"))
print("%s and %s" % ("a",))
