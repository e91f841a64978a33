print(float("2.5") * 2)
print(float("nan?"))
