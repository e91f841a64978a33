n = 10
n += 5
n -= 3
n *= 4
n //= 5
n **= 2
n %= 7
print(n)
f = 1.0
f /= 4
f += 0.125
print(f)
bits = 0
bits |= 6
bits &= 3
bits ^= 7
bits <<= 3
bits >>= 1
print(bits)
