incidents = [
    {"id": "I-1", "sev": 1, "opened": 0, "resolved": 95},
    {"id": "I-2", "sev": 2, "opened": 10, "resolved": 200},
    {"id": "I-3", "sev": 1, "opened": 30, "resolved": 50},
    {"id": "I-4", "sev": 3, "opened": 40, "resolved": None},
    {"id": "I-5", "sev": 2, "opened": 60, "resolved": 300},
]
sla = {1: 60, 2: 240, 3: 1440}
now = 500
breaches = []
for inc in incidents:
    end = inc["resolved"] if inc["resolved"] is not None else now
    took = end - inc["opened"]
    if took > sla[inc["sev"]]:
        breaches.append((inc["id"], inc["sev"], took - sla[inc["sev"]]))
print(f"{len(breaches)} breach(es)")
for iid, sev, over in sorted(breaches, key=lambda b: (b[1], -b[2])):
    print(f"  {iid} sev{sev} over by {over} min")
open_ids = [i["id"] for i in incidents if i["resolved"] is None]
print("still open:", open_ids)
