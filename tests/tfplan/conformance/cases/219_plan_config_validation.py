config = {"replicas": 3, "cpu": "500m", "memory": "1Gi", "ports": [80, 443, 70000], "env": {"MODE": "prod"}}
problems = []
if not 1 <= config["replicas"] <= 10:
    problems.append("replicas out of range")
for p in config["ports"]:
    if not 0 < p < 65536:
        problems.append(f"bad port {p}")
if not config["cpu"].endswith("m"):
    problems.append("cpu must be millicores")
mem = config["memory"]
units = {"Mi": 1, "Gi": 1024}
mem_mi = int(mem[:-2]) * units[mem[-2:]]
print("memory MiB", mem_mi)
for key in ["MODE", "REGION"]:
    if key not in config["env"]:
        problems.append(f"missing env {key}")
print(len(problems), "problems")
for pr in problems:
    print(" -", pr)
