s = "aaaa"
print(s.replace("a", "b", 0), s.replace("aa", "b"), s.count("aa"), s.count(""), s.replace("", "-"))
print("abc".find(""), "abc".find("c", 5), "hello".find("l", -2), "hello"[-2:].find("l"))
print("Hello World".lower().count("o"), "Mississippi".replace("ss", "SS").count("S"))
