players = [("ann", 120), ("bob", 95), ("cy", 120), ("dee", 80), ("eve", 95), ("fay", 60)]
ranked = sorted(players, key=lambda p: -p[1])
rank = 0
prev = None
for i, (name, pts) in enumerate(ranked, 1):
    if pts != prev:
        rank = i
        prev = pts
    print(f"{rank:>2}. {name:<4} {pts}")
medal = {1: "gold", 2: "silver", 3: "bronze"}
print([medal.get(i, "-") for i in range(1, 5)])
