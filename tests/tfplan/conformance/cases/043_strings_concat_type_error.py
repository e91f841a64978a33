count = 3
print("count is " + str(count))
label = "items: " + count
print(label)
