active = {1, 2, 3}
active.remove(2)
print(sorted(active))
active.remove(2)
print(active)
