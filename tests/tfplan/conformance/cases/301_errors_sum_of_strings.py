words = ["a", "b"]
print("".join(words))
print(sum(words, ""))
