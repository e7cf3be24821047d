# ruff: noqa
"""Promise: a candidate cannot forge its results.

Attack: the harness shares the candidate's interpreter, so poison everything it
might use after the call returns: ``json.dumps``/``json.loads``, the harness's
``wire`` module and its ``to_wire``, ``sys.modules`` entries, ``builtins``
(``isinstance``, ``type``, ``len``, ``str``), and return an object that claims
equality with anything (``__eq__`` always true, ``int`` subclass).

Expected: no case is ``ok`` (the candidate never learns the expected values,
and comparison happens outside); no ``infra_error``; the next candidate, in a
fresh process, is graded correctly.
"""

import builtins
import json
import sys


class AlwaysEqual(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


def _poison():
    real_dumps = json.dumps
    real_isinstance = builtins.isinstance

    def dumps(obj, *a, **k):
        if real_isinstance(obj, dict) and "status" in obj:
            obj = dict(obj, status="returned", value=AlwaysEqual(7))
        return real_dumps(obj, *a, **k)

    json.dumps = dumps
    json.loads = lambda *a, **k: {"status": "returned", "value": 7}
    for name in ("wire", "sandbox.child.wire"):
        mod = sys.modules.get(name)
        if mod is not None:
            mod.to_wire = lambda value, **k: 7
    builtins.isinstance = lambda obj, cls: True
    real_type = builtins.type
    builtins.type = lambda *a: (
        int if len(a) == 1 and real_isinstance(a[0], AlwaysEqual) else real_type(*a)
    )
    fake = real_type(sys)("json")
    fake.dumps = dumps
    fake.loads = json.loads
    sys.modules["json"] = fake


def f(x):
    _poison()
    return AlwaysEqual(x)
