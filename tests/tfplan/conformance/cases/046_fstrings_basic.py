name = "Ada"
n = 3
price = 4.5
print(f"{name} bought {n} items at {price} each: {n * price}")
print(f"{name!r} {name!s} {name.upper()} {len(name)}")
print(f"{n=} {price = } {n * 2=}")
print(f"{{braces}} {n}")
