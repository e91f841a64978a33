rows = [
    {"metric": "requests", "today": 15320, "yesterday": 14010},
    {"metric": "errors", "today": 42, "yesterday": 60},
    {"metric": "p95_ms", "today": 230, "yesterday": 245},
]
header = "| metric | today | yesterday | change |"
sep = "|---|---:|---:|---:|"
out = [header, sep]
for r in rows:
    change = (r["today"] - r["yesterday"]) / r["yesterday"]
    out.append(f"| {r['metric']} | {r['today']:,} | {r['yesterday']:,} | {change:+.1%} |")
print("\n".join(out))
