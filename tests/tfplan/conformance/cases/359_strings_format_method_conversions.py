print("{0!r} {1!s} {0!r:>6}|".format("ab", "cd"))
print("{:d} {:5.1f} {:<4}|{:^7}|".format(42, 2.25, "l", True))
print("{:>8}|{:08.3f}|{:+,}".format("none", -2.5, 1234567))
print("{0}{0}{1}".format("ab", [1, 2]))
