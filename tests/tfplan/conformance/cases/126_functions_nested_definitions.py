def outer(n):
    def helper(k):
        return k * n
    def twice(k):
        return helper(helper(k))
    return [helper(1), twice(1)]

print(outer(3), outer(5))
