readings = {
    "s1": [20.1, 20.3, 20.2, 35.0, 20.4],
    "s2": [18.0, 18.1, 17.9, 18.0, 18.2],
    "s3": [25.5, 10.0, 25.7, 25.6, 40.2],
}
def anomalies(vals, tol):
    med = sorted(vals)[len(vals) // 2]
    return [(i, v) for i, v in enumerate(vals) if abs(v - med) > tol]
report = {}
for sid, vals in readings.items():
    found = anomalies(vals, 5)
    if found:
        report[sid] = found
print(report)
print(f"{len(report)}/{len(readings)} sensors with anomalies")
