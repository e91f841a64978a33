print("%(name)s is %(age)d" % {"name": "Ann", "age": 31})
print("%.2f%%" % 12.345, "%d items" % 3.7, "%s" % [1, 2], "%s" % (1,))
print("%5s|%-5d|%+.1e|%c" % ("ab", 3, 12345.678, 65))
