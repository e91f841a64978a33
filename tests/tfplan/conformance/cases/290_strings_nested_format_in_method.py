print("{:>{w}}|".format("x", w=5))
print("{:{fill}^{w}}".format("mid", fill="*", w=9))
print("{0:.{1}f}".format(3.14159, 2))
print("{:,.3f} {:>+8.1%}".format(9876543.21, -0.0456))
