data = [3, 8, 12, 5, 20]
if (n := len(data)) > 3:
    print("long list", n)
i = 0
while (val := data[i]) < 10:
    print("val", val)
    i += 1
print("stopped at", val, i)
print([y for x in data if (y := x * 2) > 10])
print((total := sum(data)), total // 2)
