items = [3, 1, 2]
print(f"{sorted(items)} {sum(items) / len(items):.2f} {max(items) if items else 0}")
print(f"{'yes' if len(items) > 2 else 'no'} {[i * i for i in items]}")
d = {"a": 1}
print(f"{d} {d.get('b', 'missing')} {len(d):03}")
print(f"{items[0]}{items[-1]}{items[1:]}")
