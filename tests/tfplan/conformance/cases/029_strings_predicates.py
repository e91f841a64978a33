tests = ["123", "abc", "abc123", "", " ", "ABC", "Abc", "12.5"]
for t in tests:
    print(repr(t), t.isdigit(), t.isalpha(), t.isalnum(), t.isspace(), t.isupper(), t.islower())
