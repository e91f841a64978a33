x = "global"
def show():
    x = "local"
    return x
def read():
    return x
print(show(), read(), x)
def param(x):
    x = x + "!"
    return x
print(param("p"), x)
