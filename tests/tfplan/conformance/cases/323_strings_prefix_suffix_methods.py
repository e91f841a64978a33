names = ["test_alpha.py", "beta.py", "test_gamma.txt"]
for n in names:
    print(n.removeprefix("test_"), n.removesuffix(".py"), n.startswith("test_"), n.endswith((".py", ".txt")))
print("  a b  c ".split(None, 1), "a b c".rsplit(None, 1), "x".isdecimal(), "42".isdecimal(), "42".isnumeric())
print((3.0).is_integer(), (3.5).is_integer(), (255).bit_length(), (7).bit_count())
