word = "plan"
for i in range(6):
    print(i, word[i])
