ledger = [("deposit", 100), ("withdraw", 30), ("deposit", 45), ("withdraw", 200), ("fee", 2), ("deposit", 10)]
balance = 0
history = []
for kind, amt in ledger:
    if kind == "deposit":
        balance += amt
    elif kind in ("withdraw", "fee"):
        if amt > balance and kind == "withdraw":
            history.append(f"DECLINED {kind} {amt}")
            continue
        balance -= amt
    history.append(f"{kind:<8} {amt:>5} -> {balance:>5}")
print("\n".join(history))
print("final", balance)
