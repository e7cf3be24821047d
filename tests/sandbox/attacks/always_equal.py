# ruff: noqa
"""Promise: a candidate cannot forge its results.

Attack: return an object that says it equals anything: subclasses of ``int``,
``float``, ``str``, ``list``, ``tuple``, ``dict`` and a plain object, each with
``__eq__`` returning ``True`` (``kind``).

Expected: ``wrong`` every time (comparison is type-strict and never calls the
candidate's ``__eq__``).
"""


def _eq(self, other):
    return True


def _ne(self, other):
    return False


def _make(base):
    return type(
        "Always" + base.__name__.title(),
        (base,),
        {"__eq__": _eq, "__ne__": _ne, "__hash__": lambda s: 0},
    )


def f(kind):
    if kind == "int":
        return _make(int)(2)
    if kind == "float":
        return _make(float)(2.0)
    if kind == "str":
        return _make(str)("2")
    if kind == "list":
        return _make(list)([2])
    if kind == "tuple":
        return _make(tuple)((2,))
    if kind == "dict":
        return _make(dict)({"v": 2})
    return _make(object)()
