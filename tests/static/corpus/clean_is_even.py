def is_even(n: int) -> bool:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError("n must be an int")
    return n % 2 == 0
