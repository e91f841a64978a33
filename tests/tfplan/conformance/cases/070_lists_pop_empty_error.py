stack = [1, 2]
while True:
    top = stack.pop()
    print("popped", top)
