def is_even(n):
    if n % 2 == 0:
        return "yes"
    return "no"
