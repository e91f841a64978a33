registry = []
counters = {"calls": 0}
def register(name):
    registry.append(name)
    counters["calls"] += 1
    return len(registry)
register("a")
register("b")
print(registry, counters)
