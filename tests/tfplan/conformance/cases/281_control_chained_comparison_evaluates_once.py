def v(label, x):
    print("eval", label)
    return x
print(v("a", 1) < v("b", 2) < v("c", 3))
print(v("a", 5) < v("b", 2) < v("c", 3))
print(v("x", 1) == v("y", 1) != v("z", 2))
