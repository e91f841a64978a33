busy = [(9, 10), (12, 13), (15, 17)]
day = (8, 18)
free = []
cursor = day[0]
for s, e in sorted(busy):
    if s > cursor:
        free.append((cursor, s))
    cursor = max(cursor, e)
if cursor < day[1]:
    free.append((cursor, day[1]))
print(free)
long_slots = [f"{s:02d}:00-{e:02d}:00" for s, e in free if e - s >= 2]
print(long_slots)
