a = list(range(10))
print(a[::-1], a[::-2], a[8:2:-2], a[-1:-4:-1], a[2:8:-1], a[:3:-3])
s = "tf_plan language"
print(s[::-1], s[-1:-9:-1], s[10:2:-3])
t = (1, 2, 3, 4)
print(t[::-1], t[-2::-1])
