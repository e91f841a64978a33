for attempt in range(3):
    if attempt == 2:
        result = attempt * 10
    print("attempt", attempt)
    if attempt == 0:
        print("first result", result)
