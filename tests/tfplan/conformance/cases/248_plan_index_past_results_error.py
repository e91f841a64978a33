results = [{"title": "first", "score": 0.9}, {"title": "second", "score": 0.7}]
top = sorted(results, key=lambda r: -r["score"])
for i in range(3):
    print(i + 1, top[i]["title"])
