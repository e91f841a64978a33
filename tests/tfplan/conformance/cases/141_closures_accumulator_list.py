def make_log():
    entries = []
    def add(msg):
        entries.append(msg)
        return len(entries)
    def dump():
        return " | ".join(entries)
    return add, dump
add, dump = make_log()
add("start")
add("step")
print(add("end"), dump())
