records = [" alpha:3 ", "beta:x", "gamma:7", "", "delta:10 "]
cleaned = (r.strip() for r in records)
nonempty = (r for r in cleaned if r)
pairs = (r.split(":") for r in nonempty)
valid = [(k, int(v)) for k, v in pairs if v.isdigit()]
print(valid)
print(sum(v for k, v in valid), max(valid, key=lambda kv: kv[1])[0])
