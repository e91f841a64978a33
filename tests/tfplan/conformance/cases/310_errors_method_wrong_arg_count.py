s = "a,b,c"
print(s.split(",", 1))
print(s.split(",", 1, 2))
