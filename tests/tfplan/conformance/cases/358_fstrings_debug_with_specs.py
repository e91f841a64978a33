x = 3.14159
name = "tf"
items = [1, 2]
print(f"{x=:.2f} {name=!r} {name=:>5} {items=}")
print(f"{x * 2 = :08.3f}|{len(items)=}")
print(f"{x:{'>'}{10}.{3}}|{'ab':{'*'}^{6}}|")
