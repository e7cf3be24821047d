import math
from typing import Optional


def mean(values: list[float], weights: Optional[list[float]] = None) -> float:
    """Return the (weighted) arithmetic mean of values."""
    if not values:
        raise ValueError("mean of an empty list")
    if weights is None:
        return math.fsum(values) / len(values)
    if len(weights) != len(values):
        raise ValueError("weights and values differ in length")
    return math.fsum(v * w for v, w in zip(values, weights, strict=True)) / math.fsum(weights)
