inventory = {"bolts": 120, "nuts": 15, "washers": 0, "screws": 48}
thresholds = {"bolts": 50, "nuts": 20, "washers": 10, "screws": 50}
lead_days = {"bolts": 3, "nuts": 5, "washers": 2, "screws": 4}
reorder = []
for item, qty in inventory.items():
    if qty < thresholds[item]:
        need = thresholds[item] * 2 - qty
        reorder.append((item, need, lead_days[item]))
reorder.sort(key=lambda r: (r[2], r[0]))
for item, need, days in reorder:
    print(f"order {need} {item} (arrives in {days}d)")
print("items to reorder:", len(reorder))
