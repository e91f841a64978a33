lines = ["3 x apple", "12 x pear", "a few x plum"]
inventory = {}
for line in lines:
    qty, name = line.split(" x ")
    inventory[name] = int(qty)
    print(name, inventory[name])
