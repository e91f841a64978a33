def level3(d):
    return d["missing"]
def level2(d):
    x = level3(d)
    return x
def level1(d):
    print("entering level1")
    return level2(d) + 1
print(level1({"present": 1}))
