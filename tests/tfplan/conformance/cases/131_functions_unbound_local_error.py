count = 0
def increment():
    print("before")
    count += 1
    return count
print(increment())
