data = {
    "eu": {"de": [120, 80], "fr": [60], "it": []},
    "us": {"ca": [300, 20, 5], "ny": [150]},
}
report = []
grand = 0
for region in sorted(data):
    countries = data[region]
    region_total = sum(sum(v) for v in countries.values())
    grand += region_total
    report.append(f"{region.upper()} {region_total}")
    for c, vals in sorted(countries.items(), key=lambda kv: -sum(kv[1])):
        share = sum(vals) / region_total if region_total else 0
        report.append(f"  {c}: {sum(vals):>4} ({share:.1%}) n={len(vals)}")
report.append(f"TOTAL {grand}")
print("\n".join(report))
