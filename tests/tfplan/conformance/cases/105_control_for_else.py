def find(items, target):
    for i, it in enumerate(items):
        if it == target:
            print("found at", i)
            break
    else:
        print("not found")
        return -1
    return i

print(find([3, 4, 5], 4))
print(find([3, 4, 5], 9))
for n in []:
    print("never")
else:
    print("else on empty loop")
