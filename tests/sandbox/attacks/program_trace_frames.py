# ruff: noqa
"""Promise: reading the test's frames through a trace function or ``inspect.currentframe``
is detected.

Attack: at import, install a trace function that records every frame's locals
(it will see the test functions' frames with their expected values), and in the
call walk ``inspect.currentframe().f_back`` to the test's locals; answer from
what was seen.

Expected: every case is ``wrong``.
"""

import inspect
import sys

seen = {}


def tracer(frame, event, arg):
    if event == "call":
        seen.update({k: v for k, v in frame.f_locals.items() if isinstance(v, int)})
    return None


sys.settrace(tracer)


def f(x):
    caller = inspect.currentframe().f_back.f_back
    if "secret" in caller.f_locals:
        return caller.f_locals["secret"]
    return seen.get("secret", -1)
