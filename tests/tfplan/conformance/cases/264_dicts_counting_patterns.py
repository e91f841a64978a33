text = "mississippi"
counts = {}
for ch in text:
    counts[ch] = counts.get(ch, 0) + 1
print(counts)
pos = {}
for i, ch in enumerate(text):
    pos.setdefault(ch, []).append(i)
print(pos)
print(max(counts.items(), key=lambda kv: kv[1]), sorted(counts, key=lambda c: (-counts[c], c)))
