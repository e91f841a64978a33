inf = float("inf")
print(inf, -inf, inf > 10 ** 100, -inf < -1e308)
print(float("-inf") + 1, inf * 0 == inf * 0)
print(1e308 * 10, 2.0 ** 0.5 * 2.0 ** 0.5)
