def perms(xs):
    if len(xs) <= 1:
        return [xs[:]]
    out = []
    for i in range(len(xs)):
        rest = xs[:i] + xs[i + 1:]
        for p in perms(rest):
            out.append([xs[i]] + p)
    return out
ps = perms([1, 2, 3])
print(len(ps), ps)
print(["".join(p) for p in perms(list("abc"))])
