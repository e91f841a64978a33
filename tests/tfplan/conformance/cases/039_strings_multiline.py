text = """first line
  second line
third"""
lines = text.splitlines()
print(len(lines))
for i, ln in enumerate(lines, start=1):
    print(i, repr(ln.strip()))
joined = "a" "b" "c"
print(joined)
print(("long string " "split " "over parts").upper())
