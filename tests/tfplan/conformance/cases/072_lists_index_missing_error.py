queue = ["job1", "job2"]
print(queue.index("job2"))
pos = queue.index("job9")
print(pos)
