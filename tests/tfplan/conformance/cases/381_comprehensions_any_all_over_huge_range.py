print(any(i * i > 50 for i in range(10 ** 9)))
print(all(i < 3 for i in range(10 ** 9)))
witness = [i for i in range(20) if i % 7 == 6]
print(witness)
