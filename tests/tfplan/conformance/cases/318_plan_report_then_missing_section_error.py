report = {"summary": {"total": 12, "failed": 2}, "sections": [{"title": "Intro", "body": "hi"}, {"title": "Data"}]}
print(f"total {report['summary']['total']}, failed {report['summary']['failed']}")
for sec in report["sections"]:
    print("##", sec["title"])
    print(sec["body"])
