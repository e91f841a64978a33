for s in ["hello world", "HELLO wORLD", "it's a dog's life", "x1y2 z3", ""]:
    print(repr(s.title()), repr(s.capitalize()), repr(s.upper()), repr(s.lower()))
