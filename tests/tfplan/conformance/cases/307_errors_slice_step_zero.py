s = "abcdef"
print(s[::2], s[::-2])
print(s[::0])
