messages = [
    {"from": "ci@corp", "subject": "Build failed", "labels": ["ci", "alert"], "unread": True},
    {"from": "boss@corp", "subject": "Q3 plan", "labels": ["work"], "unread": True},
    {"from": "ci@corp", "subject": "Build passed", "labels": ["ci"], "unread": False},
    {"from": "news@x", "subject": "Weekly digest", "labels": [], "unread": True},
]
unread = [m for m in messages if m["unread"]]
print(f"You have {len(unread)} unread messages:")
for m in unread:
    tags = ",".join(m["labels"]) or "none"
    print(f"  * {m['subject']!r} from {m['from']} [{tags}]")
senders = {}
for m in messages:
    senders[m["from"]] = senders.get(m["from"], 0) + 1
print("most frequent sender:", max(senders.items(), key=lambda kv: kv[1])[0])
