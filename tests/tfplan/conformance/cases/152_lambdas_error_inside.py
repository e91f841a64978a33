convert = lambda s: int(s) * 2
vals = ["1", "2", "three"]
print(convert(vals[0]))
print(list(map(convert, vals)))
