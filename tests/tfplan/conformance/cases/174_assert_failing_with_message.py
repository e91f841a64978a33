totals = {"a": 10, "b": -3}
for k, v in totals.items():
    print("checking", k)
    assert v >= 0, f"{k} is negative: {v}"
