"""Tools for the example plan: a tiny product catalogue and a currency converter."""

CATALOGUE = {
    "lamp": {"price": 24.5, "stock": 12, "tags": ["home", "light"]},
    "desk": {"price": 189.0, "stock": 3, "tags": ["home", "office"]},
    "chair": {"price": 79.9, "stock": 0, "tags": ["office"]},
    "pen": {"price": 1.2, "stock": 400, "tags": ["office"]},
}
RATES = {"EUR": 1.0, "USD": 1.08, "GBP": 0.85}


def list_products(tag: str) -> list[str]:
    """Names of the products that carry a tag."""
    return sorted(name for name, item in CATALOGUE.items() if tag in item["tags"])


def get_product(name: str) -> dict:
    """Price (EUR) and stock of a product."""
    item = CATALOGUE[name]
    return {"name": name, "price": item["price"], "stock": item["stock"]}


async def convert(amount: float, currency: str) -> float:
    """Convert an amount in EUR to another currency."""
    return round(amount * RATES[currency], 2)
