print("ab" * 2)
print("ab" * 2.0)
