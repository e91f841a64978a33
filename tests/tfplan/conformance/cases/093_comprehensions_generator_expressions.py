xs = [3, 8, 1, 9]
print(sum(x * 2 for x in xs), max(x % 5 for x in xs), min((x for x in xs), default=0))
print(any(x > 8 for x in xs), all(x > 0 for x in xs))
print(sorted((x for x in xs), reverse=True))
print(list(x + 1 for x in xs), tuple(x for x in xs if x > 2), set(x % 2 for x in xs))
print(", ".join(f"<{x}>" for x in xs))
