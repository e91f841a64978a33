text = ("Plans are checked before they run, so a bad plan costs a replan and not an "
        "execution. Limits keep every plan bounded in time and memory.")
width = 28
lines = []
cur = []
for word in text.split():
    if cur and len(" ".join(cur + [word])) > width:
        lines.append(" ".join(cur))
        cur = [word]
    else:
        cur.append(word)
lines.append(" ".join(cur))
for ln in lines:
    print(ln.ljust(width) + "|")
print(len(lines), "lines")
