stats = [("api", 1523, 0.0123), ("web", 88, 0.25), ("batch", 40210, 0.0)]
print("%-8s %8s %8s" % ("service", "requests", "errors"))
for name, reqs, err in stats:
    print("%-8s %8d %7.2f%%" % (name, reqs, err * 100))
print("total requests: %d" % sum(r for n, r, e in stats))
