def greet():
    return "first"
print(greet())
def greet():
    return "second"
print(greet())
mode = "b"
if mode == "a":
    def pick(x):
        return x + 1
else:
    def pick(x):
        return x - 1
print(pick(10))
