def describe():
    return f"{NAME} v{VERSION}"
NAME = "planner"
VERSION = 2
print(describe())
VERSION = 3
print(describe())
