ledger = [("a", 100), ("b", -40), ("c", -70)]
balance = 0
for who, delta in ledger:
    balance += delta
    print(who, balance)
    assert balance >= 0, f"balance went negative after {who}"
print("ok")
