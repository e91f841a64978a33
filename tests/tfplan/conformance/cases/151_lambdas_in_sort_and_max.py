people = [("ann", 31), ("bob", 25), ("cy", 31), ("di", 19)]
print(sorted(people, key=lambda p: p[1]))
print(sorted(people, key=lambda p: (-p[1], p[0])))
print(max(people, key=lambda p: p[1]), min(people, key=lambda p: len(p[0])))
print(list(map(lambda p: p[0].title(), people)))
