requests = [0, 1, 1, 2, 2, 2, 3, 10, 10, 11]
capacity = 3
window = 2
accepted = []
rejected = []
for t in requests:
    recent = [a for a in accepted if a > t - window]
    if len(recent) < capacity:
        accepted.append(t)
    else:
        rejected.append(t)
print("accepted", accepted)
print("rejected", rejected)
print(f"acceptance {len(accepted) / len(requests):.0%}")
