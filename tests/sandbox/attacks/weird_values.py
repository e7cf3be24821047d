# ruff: noqa
"""Promise: a candidate cannot take the grader down with what it returns.

Attack: return values that break naive serializers (``kind``): a list that
contains itself, a dict that contains itself, 100 000 levels of nesting, a
string with lone surrogates (as value and as dict key), a result far larger than
the result limit; raise an exception whose message has lone surrogates; print
lone surrogates and invalid UTF-8.

Expected: an outcome (``wrong``/``error``) for each, never a crash of the
grader; the result is valid Unicode.
"""

import os


def f(kind):
    if kind == "cycle_list":
        a = []
        a.append(a)
        return a
    if kind == "cycle_dict":
        d = {}
        d["self"] = d
        return d
    if kind == "deep":
        v = []
        for _ in range(100_000):
            v = [v]
        return v
    if kind == "surrogate":
        return "\ud800"
    if kind == "surrogate_key":
        return {"\udcff": 1}
    if kind == "huge":
        return "x" * (64 * 1024 * 1024)
    if kind == "raise_surrogate":
        raise ValueError("\ud800 bad")
    if kind == "print_surrogate":
        print("\ud800 \udcff")
        os.write(1, b"\xff\xfe\xc3(")
        return "printed"
    return None
