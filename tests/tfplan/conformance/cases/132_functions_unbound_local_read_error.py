total = 10
def report():
    print("total is", total)
    total = 5
    return total
report()
