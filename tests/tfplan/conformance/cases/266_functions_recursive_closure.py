def make_walker(tree):
    seen = []
    def walk(key):
        seen.append(key)
        for child in tree.get(key, []):
            walk(child)
    walk("root")
    return seen
print(make_walker({"root": ["a", "b"], "a": ["c"], "b": [], "c": ["d"]}))
