def walk(node, depth):
    print("depth", depth, node["name"])
    for child in node["children"]:
        walk(child, depth + 1)
tree = {"name": "root", "children": [{"name": "a", "children": []}, {"name": "b"}]}
walk(tree, 0)
