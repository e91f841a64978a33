graph = {"a": ["b", "c"], "b": ["d"], "c": ["d", "e"], "d": ["f"], "e": ["f"], "f": []}
def bfs(start, goal):
    queue = [[start]]
    seen = {start}
    while queue:
        path = queue.pop(0)
        node = path[-1]
        if node == goal:
            return path
        for nxt in graph[node]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(path + [nxt])
    return None
print(bfs("a", "f"), bfs("c", "f"), bfs("d", "a"))
indeg = {n: 0 for n in graph}
for n in graph:
    for m in graph[n]:
        indeg[m] += 1
print(indeg)
