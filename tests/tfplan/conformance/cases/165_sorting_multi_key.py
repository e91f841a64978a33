emps = [
    {"name": "zed", "dept": "ops", "salary": 50},
    {"name": "amy", "dept": "dev", "salary": 70},
    {"name": "bob", "dept": "ops", "salary": 70},
    {"name": "cat", "dept": "dev", "salary": 70},
    {"name": "dan", "dept": "dev", "salary": 40},
]
for e in sorted(emps, key=lambda e: (e["dept"], -e["salary"], e["name"])):
    print(e["dept"], e["salary"], e["name"])
print([e["name"] for e in sorted(emps, key=lambda e: e["salary"], reverse=True)])
