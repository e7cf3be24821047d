# ruff: noqa
"""Promise: a candidate cannot forge its results.

Attack: end the program "successfully" from inside the function:
``sys.exit(0)``, ``raise SystemExit``, ``raise KeyboardInterrupt`` (mode).

Expected: an exception outcome: ``error`` for a case that expects a value or
a plain ``Exception``; only a case that names ``SystemExit`` accepts it.
"""

import sys


def f(mode):
    if mode == "sys_exit":
        sys.exit(0)
    if mode == "system_exit":
        raise SystemExit
    if mode == "keyboard_interrupt":
        raise KeyboardInterrupt
    return mode
