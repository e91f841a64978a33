print(list("ab"))
print(list(5))
