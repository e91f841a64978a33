x = None
print(x is None, x is not None, x == None, [] is [], [] == [])
a = [1]
b = a
print(a is b, a is not [1])
print(True is True, 1 in [True], None in [0, False])
