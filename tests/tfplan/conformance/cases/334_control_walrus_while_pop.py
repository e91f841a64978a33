stack = [1, 2, 3, 4]
seen = []
while stack and (top := stack.pop()) != 2:
    seen.append(top)
print(seen, stack, top)
lines = ["a", "bb", "", "ccc"]
idx = 0
while (line := lines[idx]):
    print("line", line)
    idx += 1
