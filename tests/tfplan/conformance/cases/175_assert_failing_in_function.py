def validate(order):
    assert "id" in order
    assert order["qty"] > 0
    return True
print(validate({"id": 1, "qty": 2}))
print(validate({"id": 2, "qty": 0}))
