def mean(values: list[float], weights: list[float]) -> float | None:
    if not values:
        return None
    total = sum(v * w for v, w in zip(values, weights, strict=True))
    return total / sum(weights)
