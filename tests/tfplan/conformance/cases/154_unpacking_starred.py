first, *rest = [1, 2, 3, 4]
print(first, rest)
*init, last = "abcd"
print(init, last)
head, *mid, tail = range(6)
print(head, mid, tail)
a, *b, c = [1, 2]
print(a, b, c)
*everything, = (7, 8)
print(everything)
