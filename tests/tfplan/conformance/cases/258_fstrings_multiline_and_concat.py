name = "plan"
n = 4
msg = (
    f"name={name} "
    f"n={n} "
    "plain "
    f"sq={n ** 2}"
)
print(msg)
lines = [f"{i}:{c}" for i, c in enumerate(name)]
print(f"{', '.join(lines)}")
print(f"{n:>{n}}|{'':-^{n * 2}}|")
