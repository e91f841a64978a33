before = {"a": 1, "b": 2, "c": 3, "d": 4}
after = {"a": 1, "b": 20, "d": 4, "e": 5}
added = sorted(set(after) - set(before))
removed = sorted(set(before) - set(after))
changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
print("added", added)
print("removed", removed)
print("changed", [(k, before[k], after[k]) for k in changed])
print("unchanged", sorted(k for k in before if after.get(k) == before[k]))
