def is_pal(s):
    cleaned = "".join(c.lower() for c in s if c.isalnum())
    return cleaned == cleaned[::-1]

for s in ["A man, a plan, a canal: Panama", "hello", "No lemon, no melon", "", "ab"]:
    print(repr(s), is_pal(s))
