# ruff: noqa
"""Control (must pass): raising the expected exceptions, genuine ones and genuine subclasses."""

import json


class NotAnInt(TypeError):
    pass


def f(x):
    if x == "json":
        return json.loads("{bad")
    if x == "subclass":
        raise NotAnInt("a genuine subclass of TypeError")
    if not isinstance(x, int) or isinstance(x, bool):
        raise TypeError("need an int")
    return x % 2 == 0
