xs = [3, 1, 2]
xs.sort()
print(xs)
xs.push(4)
