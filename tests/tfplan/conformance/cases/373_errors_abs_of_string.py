vals = ["-3", "4"]
print([abs(int(v)) for v in vals])
print(abs(vals[0]))
