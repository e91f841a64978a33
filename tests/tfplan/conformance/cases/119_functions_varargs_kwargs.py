def f(a, *args, **kwargs):
    return f"a={a} args={args} kwargs={kwargs}"

print(f(1))
print(f(1, 2, 3))
print(f(1, x=2, y=3))
print(f(*[1, 2], **{"k": "v"}))
def total(*nums):
    return sum(nums)
print(total(), total(1, 2, 3), total(*range(5)))
