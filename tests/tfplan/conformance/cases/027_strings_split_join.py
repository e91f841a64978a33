line = "a,b,,c"
print(line.split(","), line.split(",", 1), line.rsplit(",", 1))
print("  many   spaces here ".split())
print("-".join(["x", "y", "z"]), "".join(reversed("abc")), ", ".join(str(n) for n in range(4)))
print("one\ntwo\r\nthree\n".splitlines())
print("key=value=more".partition("="), "novalue".partition("="), "a.b.c".rpartition("."))
