transitions = {"new": ["paid", "cancelled"], "paid": ["shipped", "refunded"], "shipped": ["delivered"]}
history = {"o1": ["new", "paid", "shipped", "delivered"], "o2": ["new", "shipped"], "o3": ["new", "cancelled"]}
for oid, states in history.items():
    ok = True
    for a, b in zip(states, states[1:]):
        if b not in transitions.get(a, []):
            print(f"{oid}: illegal {a} -> {b}")
            ok = False
            break
    if ok:
        print(f"{oid}: valid, final={states[-1]}")
