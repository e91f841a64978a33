print(round(2.567, 1))
print(round("2.5"))
