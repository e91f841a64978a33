value = "abc"
print(f"{value:>5}")
print(f"{value:.2f}")
