queue = ["a", "b"]
queue.append("c")
print(queue)
queue.push_front("z")
print(queue)
