orders = [{"amount": 10}, {"amount": 25}, {"amount": 7}]
sum = 0
count = 0
for o in orders:
    sum += o["amount"]
    count += 1
print(f"total={sum} count={count} avg={sum / count:.2f}")
