scores = {"ann": 3, "bob": 5}
best = sorted(scores.items(), key=lambda kv: -kv[1])
print(best[0])
print(scores.items()[0])
