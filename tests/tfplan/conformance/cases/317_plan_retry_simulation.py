attempts_needed = {"fetch": 3, "parse": 1, "store": 5}
max_retries = 4
log = []
for step, needed in attempts_needed.items():
    for attempt in range(1, max_retries + 1):
        if attempt >= needed:
            log.append(f"{step}: ok after {attempt}")
            break
        log.append(f"{step}: retry {attempt}")
    else:
        log.append(f"{step}: gave up")
print("\n".join(log))
failed = [s for s, n in attempts_needed.items() if n > max_retries]
print("failed steps:", failed)
