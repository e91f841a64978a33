crm = [{"email": "a@x.io", "name": "Ann"}, {"email": "b@x.io", "name": "Bo"}]
billing = [{"email": "b@x.io", "plan": "pro"}, {"email": "c@x.io", "plan": "free"}]
merged = {}
for row in crm:
    merged.setdefault(row["email"], {}).update(row)
for row in billing:
    merged.setdefault(row["email"], {}).update(row)
for email in sorted(merged):
    r = merged[email]
    print(email, r.get("name", "-"), r.get("plan", "none"))
only_crm = [e for e in merged if "plan" not in merged[e]]
print("without plan:", only_crm)
