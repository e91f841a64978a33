items = ["plain", "it's", 'say "hi"', "both ' and \"", "tab\there", "new\nline", "back\\slash"]
for it in items:
    print(repr(it))
print(items)
print(str(items[1]), len(items[4]))
