limit: int = 5
print(limit)
threshold: int
print(threshold)
