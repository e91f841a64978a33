print("%s has %d items" % ("cart", 3))
print("%5.2f|%-5s|%05d" % (3.14159, "ab", 42))
print("%r %s" % ("q", "q"))
print("%x %o %%" % (255, 8))
