def fetch(url, *, timeout=10, retries):
    return f"{url} t={timeout} r={retries}"

print(fetch("a", retries=2))
print(fetch("b", timeout=1, retries=0))
def only_kw(*, a, b=2):
    return a + b
print(only_kw(a=1), only_kw(b=5, a=1))
