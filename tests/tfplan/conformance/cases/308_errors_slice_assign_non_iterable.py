xs = [1, 2, 3]
xs[0:1] = [9, 9]
print(xs)
xs[0:1] = 5
