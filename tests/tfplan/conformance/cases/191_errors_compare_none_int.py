scores = [3, None, 5]
best = 0
for s in scores:
    print("score", s)
    if s > best:
        best = s
