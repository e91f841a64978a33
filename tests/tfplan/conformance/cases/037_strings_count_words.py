text = "the cat and the hat and the bat"
counts = {}
for w in text.split():
    counts[w] = counts.get(w, 0) + 1
print(counts)
best = max(counts, key=lambda k: counts[k])
print(best, counts[best])
print(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
