def f(a, b, c, d=0):
    return a * 1000 + b * 100 + c * 10 + d
args = [1, 2]
print(f(*args, 3), f(*args, *[3, 4]), f(1, *[2], **{"c": 3, "d": 4}))
print([*range(3), *"ab"], (*[1], 2), {*[1, 1, 2]})
print({"a": 1, **{"b": 2}}, [*[], *[[]]])
print(*[1, 2, 3], sep="-")
print(*"abc")
