s = "data"
print(s.upper())
print(s.reverse())
