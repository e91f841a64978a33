raw = ["10", "20", "3x", "40"]
total = 0
for r in raw:
    total += int(r)
    print("running", total)
