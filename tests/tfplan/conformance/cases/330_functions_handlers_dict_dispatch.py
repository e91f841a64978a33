handlers = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b if b else None,
}
program = [("add", 2, 3), ("mul", 4, 5), ("div", 9, 0), ("sub", 1, 10), ("div", 9, 3)]
for op, a, b in program:
    print(op, a, b, "=>", handlers[op](a, b))
