a = "ab"
b = a * 3
print(b, len(b), a + "-" + b, "-" * 10)
print("x" * 0 == "", 3 * "yo")
s = ""
for ch in "hello":
    s = ch + s
print(s)
print("abc" < "abd", "Z" < "a", "apple" > "app", "" < "a")
