s = "  Hello, World  "
print(repr(s.strip()), repr(s.lstrip()), repr(s.rstrip()))
t = s.strip()
print(t.upper(), t.lower(), t.title())
print(t.replace("l", "L"), t.replace("l", "", 2), t.count("l"), t.find("o"), t.find("z"), t.rfind("o"))
print(t.startswith("Hell"), t.endswith("!"), t.startswith(("x", "H")))
print("hello world".capitalize(), "ABC".lower())
