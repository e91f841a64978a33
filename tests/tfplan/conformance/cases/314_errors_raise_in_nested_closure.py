def make_validator(limit):
    def validate(v):
        if v > limit:
            raise ValueError(f"{v} exceeds {limit}")
        return v
    return validate
check = make_validator(10)
print(check(3), check(10))
print([check(v) for v in [5, 11, 2]])
