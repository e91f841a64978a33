txns = [
    ("2024-01-15", 100.0), ("2024-01-20", 50.5), ("2024-02-03", 75.25),
    ("2024-03-10", 10.0), ("2024-03-11", 990.0), ("2024-02-28", 24.75),
]
monthly = {}
for date, amt in txns:
    month = date[:7]
    monthly[month] = monthly.get(month, 0.0) + amt
running = 0.0
for month in sorted(monthly):
    running += monthly[month]
    print(f"{month}  {monthly[month]:8.2f}  cum {running:9.2f}")
best = max(monthly, key=monthly.get)
print("best month", best)
