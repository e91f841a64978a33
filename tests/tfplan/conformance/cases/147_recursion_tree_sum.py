tree = {"v": 1, "kids": [{"v": 2, "kids": []}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]}
def total(node):
    return node["v"] + sum(total(k) for k in node["kids"])
def paths(node, prefix):
    here = prefix + [node["v"]]
    if not node["kids"]:
        return [here]
    out = []
    for k in node["kids"]:
        out += paths(k, here)
    return out
print(total(tree), paths(tree, []))
