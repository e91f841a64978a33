text = "tf plans are python subsets that call chains and tools in sandboxed interpreters"
words = text.split()
limit = 20
chunks = []
cur = ""
for w in words:
    cand = w if not cur else cur + " " + w
    if len(cand) > limit and cur:
        chunks.append(cur)
        cur = w
    else:
        cur = cand
if cur:
    chunks.append(cur)
for c in chunks:
    print(f"|{c:<{limit}}|", len(c))
