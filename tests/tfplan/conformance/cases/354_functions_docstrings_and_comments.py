def area(w, h):
    """Return the area of a w x h rectangle.

    Both sides must be non-negative.
    """
    # a comment inside the body
    return w * h  # trailing comment

"""A module-level string is just an expression."""
print(area(3, 4))
print(area(0, 9))
