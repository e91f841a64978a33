def check(xs):
    assert isinstance(xs, list), "needs a list"
    assert len(xs) > 0
    assert all(x >= 0 for x in xs), f"negative in {xs}"
    return sum(xs)
print(check([1, 2]), check([0]))
assert True
assert 1 == 1, "math"
print("all asserts passed")
