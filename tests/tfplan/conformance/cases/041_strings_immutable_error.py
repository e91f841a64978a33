s = "hello"
print(s.upper())
s[0] = "H"
print(s)
