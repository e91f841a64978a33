def append_twice(lst, v):
    lst.append(v)
    lst.append(v)
def rebind(lst):
    lst = [0]
    return lst
data = [1]
append_twice(data, 7)
print(data, rebind(data), data)
def bump(d):
    d["n"] = d.get("n", 0) + 1
state = {}
for rep in range(3):
    bump(state)
print(state)
