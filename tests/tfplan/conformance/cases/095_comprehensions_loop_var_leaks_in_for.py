for i in range(3):
    pass
print(i)
for ch in "xyz":
    last = ch
print(ch, last)
j = 99
for j in []:
    pass
print(j)
