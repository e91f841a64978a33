def outer():
    val = 1
    def get():
        return val
    val = 2
    return get
print(outer()())
config = {"mode": "a"}
def mode():
    return config["mode"]
config["mode"] = "b"
print(mode())
