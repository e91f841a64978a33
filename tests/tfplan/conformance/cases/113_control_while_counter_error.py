remaining = [5, 3, 1]
budget = 10
while remaining:
    cost = remaining.pop(0)
    budget -= cost
    print("budget", budget)
    per_unit = budget // (cost - 1)
    print("per unit", per_unit)
