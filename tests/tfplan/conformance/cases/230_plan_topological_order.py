deps = {"deploy": ["build", "test"], "test": ["build"], "build": ["fetch"], "fetch": [], "docs": ["fetch"]}
order = []
done = set()
def visit(n, stack):
    if n in done:
        return
    assert n not in stack, "cycle at " + n
    for d in deps[n]:
        visit(d, stack + [n])
    done.add(n)
    order.append(n)
for n in sorted(deps):
    visit(n, [])
print(order)
print(" -> ".join(order))
