doc = "To be or not to be that is the question whether tis nobler in the mind to suffer"
freq = {}
for w in doc.lower().split():
    freq[w] = freq.get(w, 0) + 1
top = sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
print(top)
print(" ".join(f"{w}:{n}" for w, n in top))
print(len(freq), sum(freq.values()))
