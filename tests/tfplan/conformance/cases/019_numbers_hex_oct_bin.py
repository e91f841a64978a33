for n in [0, 1, 7, 8, 255, 256, 4096]:
    print(n, hex(n), oct(n), bin(n))
print(int(hex(1234), 16), int(bin(99), 2), int(oct(64), 8))
