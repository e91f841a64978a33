trace = []
def t(name, val):
    trace.append(name)
    return val
r = t("a", 0) or t("b", "") or t("c", "hit") or t("d", "never")
print(r, trace)
trace.clear()
r = t("a", 1) and t("b", [1]) and t("c", 0) and t("d", "never")
print(r, trace)
trace.clear()
r = (t("a", 0) and t("b", 1)) or (t("c", 1) and t("d", 2))
print(r, trace)
