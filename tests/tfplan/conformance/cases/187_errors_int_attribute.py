n = 5
print(n.bit_length())
print(n.upper())
