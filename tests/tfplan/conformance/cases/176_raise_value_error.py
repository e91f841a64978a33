def parse_pct(s):
    v = float(s.rstrip("%"))
    if not 0 <= v <= 100:
        raise ValueError(f"out of range: {s}")
    return v / 100
print(parse_pct("50%"), parse_pct("12.5%"))
print(parse_pct("150%"))
