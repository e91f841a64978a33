words = ["zeta", "Alpha", "beta", "Éclair", "apple", "_x", "10", "9"]
print(sorted(words))
print(sorted(words, key=lambda w: w.lower()))
print(max(words), min(words), "a" < "b" < "c", "abc" == "ab" + "c")
