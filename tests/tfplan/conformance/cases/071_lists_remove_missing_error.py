xs = ["a", "b", "c"]
xs.remove("b")
print(xs)
xs.remove("z")
print(xs)
