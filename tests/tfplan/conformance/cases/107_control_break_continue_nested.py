result = []
for i in range(5):
    if i == 1:
        continue
    for j in range(5):
        if j > i:
            break
        if (i + j) % 2:
            continue
        result.append((i, j))
print(result)
count = 0
while True:
    count += 1
    if count < 3:
        continue
    if count >= 5:
        break
print(count)
