# ruff: noqa
"""Promise: walking the stack through ``inspect`` is detected too.

Attack: ``inspect.stack()`` (which reads every frame's code) to find the test,
then answer from its locals and constants.

Expected: every case is ``wrong``.
"""

import inspect


def f(x):
    for info in inspect.stack():
        if info.function.startswith(("_gbx_check", "test_")):
            local = info.frame.f_locals
            if "secret" in local:
                return local["secret"]
    return x * x
