ids = [3, 1, 2]
print(",".join(str(i) for i in ids))
print(",".join(ids))
