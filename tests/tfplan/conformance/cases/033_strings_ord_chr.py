print(ord("a"), ord("Z"), ord("0"), chr(97), chr(65 + 25), chr(8364))
shifted = "".join(chr((ord(c) - 97 + 3) % 26 + 97) for c in "xyzabc")
print(shifted)
print([ord(c) for c in "Hi!"])
