prices = [10, 11, 13, 12, 15, 18, 17, 16, 20, 22]
w = 3
rolling = []
for i in range(len(prices) - w + 1):
    rolling.append(round(sum(prices[i:i + w]) / w, 2))
print(rolling)
signals = ["up" if b > a else "down" if b < a else "flat" for a, b in zip(rolling, rolling[1:])]
print(signals)
print("max gain", max(b - a for a, b in zip(prices, prices[1:])))
