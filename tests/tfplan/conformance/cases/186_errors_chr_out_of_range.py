codes = [72, 105, -1]
out = ""
for c in codes:
    out += chr(c)
    print(out)
