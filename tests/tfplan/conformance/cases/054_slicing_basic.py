a = list(range(10))
print(a[2:5], a[:3], a[7:], a[-3:], a[:-7], a[:], a[5:2])
print(a[::2], a[1::3], a[100:], a[-100:2])
s = "abcdefgh"
print(s[1:4], s[-2:], s[:0], s[3:3], s[::3])
