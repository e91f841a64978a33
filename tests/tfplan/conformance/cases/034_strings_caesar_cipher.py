def shift_char(c, k):
    if c.isalpha() and c.islower():
        return chr((ord(c) - ord("a") + k) % 26 + ord("a"))
    if c.isalpha() and c.isupper():
        return chr((ord(c) - ord("A") + k) % 26 + ord("A"))
    return c

msg = "Attack at Dawn, Zulu!"
enc = "".join(shift_char(c, 13) for c in msg)
print(enc)
print("".join(shift_char(c, -13) for c in enc))
