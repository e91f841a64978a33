def fetch(url, *, retries):
    return url * retries

print(fetch("ab", retries=2))
print(fetch("ab", 2))
