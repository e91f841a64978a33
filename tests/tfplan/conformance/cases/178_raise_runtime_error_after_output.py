steps = ["fetch", "parse", "store"]
for s in steps:
    print("step", s)
    if s == "parse":
        raise RuntimeError("parser unavailable")
print("finished")
