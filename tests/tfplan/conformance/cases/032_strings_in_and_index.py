s = "the quick brown fox"
print("quick" in s, "slow" in s, "" in s, "q" not in s)
print(s.index("brown"), s.index("o"), s.index("o", 13), s.rindex("o"))
print(s[4], s[-1], s[-3:])
for i, ch in enumerate(s):
    if ch == "o":
        print("o at", i)
