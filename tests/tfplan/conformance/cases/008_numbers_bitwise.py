a = 0b1100
b = 0b1010
print(a & b, a | b, a ^ b, ~a, a << 2, a >> 2)
print(-8 >> 1, -1 >> 10, 1 << 40)
print(bin(a & b), hex(255), oct(8), bin(-5), hex(-255))
