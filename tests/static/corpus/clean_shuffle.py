import random


def shuffled(items: list[int], seed: int) -> list[int]:
    rng = random.Random(seed)
    out = list(items)
    rng.shuffle(out)
    assert sorted(out) == sorted(items)
    return out
