def total(prices: list, tax: float = 0.2) -> float:
    """Sum prices and add tax."""
    subtotal: float = sum(prices)
    return round(subtotal * (1 + tax), 2)
count: int = 3
names: list = ["a", "b"]
print(total([10, 20]), total([1.5], tax=0), count, names)
def describe(x: "int | None") -> str:
    return "none" if x is None else str(x)
print(describe(None), describe(4))
