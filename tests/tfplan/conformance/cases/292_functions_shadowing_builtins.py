sum = 0
for n in [1, 2, 3]:
    sum += n
print(sum)
max = "not a function"
print(max.upper())
list = [3, 1]
print(sorted(list), len(list))
