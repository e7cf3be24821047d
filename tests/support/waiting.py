"""Waiting for an event in a test: poll a condition until it holds, up to a deadline.

A test on a busy machine must not decide by a fixed sleep ("it will have happened
by then") or by a tight wall-clock bound: both fail when the machine is slow. It
polls for the event instead (a file appears, a process is gone, a server recorded
a request) and passes as soon as the event is there; the deadline is generous and
only stops a hang. Tests that must show something does *not* happen use
:func:`holds_for` over a window that is longer than the thing would take.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

HANG_S = 60.0
"""The default deadline: far beyond any event a test waits for, so it only bounds a hang."""


def wait_until(
    predicate: Callable[[], T],
    *,
    timeout: float = HANG_S,
    interval: float = 0.02,
    what: str = "",
) -> T:
    """Call ``predicate`` until it returns something truthy, and return that.

    Raises:
        AssertionError: ``timeout`` seconds passed first (it names ``what``, or the
            predicate, and its last value).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            name = what or getattr(predicate, "__name__", repr(predicate))
            raise AssertionError(f"gave up after {timeout:.0f} s waiting for {name}: {value!r}")
        time.sleep(interval)


def holds_for(predicate: Callable[[], object], seconds: float, *, interval: float = 0.05) -> bool:
    """Whether ``predicate`` stays truthy for ``seconds`` (checked every ``interval``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not predicate():
            return False
        time.sleep(interval)
    return bool(predicate())
