# ruff: noqa
"""Control (must pass): importing common standard-library modules."""

import collections
import dataclasses
import decimal
import fractions
import functools
import heapq
import itertools
import json
import math
import re
import statistics
import string


def f(s):
    counts = collections.Counter(s)
    pairs = list(itertools.combinations(sorted(counts), 2))
    data = json.loads(json.dumps({"pairs": pairs}))
    return [
        len(data["pairs"]),
        counts.most_common(1)[0][0],
        math.isqrt(17),
        str(fractions.Fraction(1, 3) + fractions.Fraction(1, 6)),
        str(decimal.Decimal("0.1") + decimal.Decimal("0.2")),
        heapq.nsmallest(2, [5, 1, 4]),
        statistics.median([3, 1, 2]),
        bool(re.fullmatch(r"[a-z]+", s)),
        string.ascii_lowercase[:3],
        functools.reduce(lambda a, b: a * b, [1, 2, 3, 4]),
    ]
