print("{:.1f}".format(3))
print("{:d}".format(3.0))
