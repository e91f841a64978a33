def join_all(*parts, sep=", ", prefix=""):
    return prefix + sep.join(str(p) for p in parts)
print(join_all(1, 2, 3))
print(join_all("a", "b", sep="|", prefix="> "))
print(join_all())
