print(0 or "a", "" or [] or None, 1 and 2, 0 and 1/0, [] and "x", "x" and "")
print(None or 0 or "last", 3 and 4 and 5)
print(not 0, not "", not [0], not None)
def boom():
    print("boom called")
    return True
print(True or boom(), False and boom())
print(False or boom())
