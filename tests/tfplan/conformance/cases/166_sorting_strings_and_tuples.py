words = ["banana", "Cherry", "apple", "date", "Elder", "fig"]
print(sorted(words))
print(sorted(words, key=lambda w: w.lower()))
print(sorted(words, key=len))
print(sorted(words, key=lambda w: (len(w), w.lower())))
print(sorted([(2, "b"), (1, "z"), (2, "a"), (1, "a")]))
print(sorted("tf_plan"), sorted([3.5, -1, 2, True]))
