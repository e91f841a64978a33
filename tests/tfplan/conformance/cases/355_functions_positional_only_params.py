def clamp(x, /, lo=0, hi=10):
    return max(lo, min(hi, x))
print(clamp(15), clamp(-3), clamp(5, hi=4), clamp(7, 8, 9))
def tag(name, /, *, sep=":"):
    return f"{name}{sep}"
print(tag("k"), tag("k", sep="="))
