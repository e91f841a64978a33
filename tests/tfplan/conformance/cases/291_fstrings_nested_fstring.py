name = "plan"
items = ["a", "b"]
print(f"{f'{name}!':>8}|")
print(f"{'|'.join(f'<{i}>' for i in items)}")
print(f"{name!r:>10}|{name!s:<6}|")
w = 6
print(f"{f'{3.14159:.{2}f}':^{w}}|")
