def make_counter():
    state = {"n": 0}
    def step(by=1):
        state["n"] += by
        return state["n"]
    return step

c1 = make_counter()
c2 = make_counter()
print(c1(), c1(), c1(5), c2())
