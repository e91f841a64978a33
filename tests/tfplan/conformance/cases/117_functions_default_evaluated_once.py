counter = 5
def show(x=counter):
    return x
counter = 50
print(show(), show(1))
