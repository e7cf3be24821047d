"""Waiting for an event in a test: poll a condition until it holds, up to a deadline.

A test on a busy machine must not decide by a fixed sleep ("it will have happened
by then") or by a tight wall-clock bound: both fail when the machine is slow. It
polls for the event instead (a file appears, a process is gone, a server recorded
a request) and passes as soon as the event is there; the deadline is generous and
only stops a hang. Tests that must show something does *not* happen use
:func:`holds_for` over a window that is longer than the thing would take.

Work that a loaded machine stretches without bound (a gate that builds and tests a
repository) is waited for while it makes progress: :class:`Progress` moves its
deadline each time a CPU-time counter (:func:`tree_cpu_s`) moves. An attack that a
starved candidate never got to play is played again: :func:`retry_starved`.
"""

from __future__ import annotations

import os
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


def retry_starved(attempt: Callable[[], T], starved: Callable[[T], bool], *, tries: int = 3) -> T:
    """Play ``attempt`` until ``starved`` says its result proves something, at most ``tries`` times.

    An attack whose evidence is missing *and* whose case ran out of time was starved
    by a busy machine: it proves nothing either way, so it is played again. The
    attempt asserts what must hold on every try (containment) before it returns;
    the caller asserts the evidence on the last result, so a broken attack (no
    evidence, no timeout, or starved every time) still fails the test.
    """
    result = attempt()
    for _ in range(tries - 1):
        if not starved(result):
            break
        result = attempt()
    return result


def tree_cpu_s(pid: int, *, own: bool = True) -> float:
    """CPU seconds spent by ``pid``, its live descendants and the children they reaped.

    Read from ``/proc`` (``utime + stime + cutime + cstime``); a process that ends
    between reads is skipped, so the figure is a progress counter, not an account.
    ``own=False`` leaves out ``pid``'s own time (a test measuring the work it waits
    for, not its own polling).
    """
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            counted = fields[11:15] if own or p != pid else fields[13:15]
            total += sum(int(v) for v in counted) / tick
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children", "rb") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except (OSError, IndexError, ValueError):
            continue
    return total


class Progress:
    """A deadline that moves while a counter moves: waits out slow work, stops a stall.

    ``expired()`` is true once ``measure()`` (a CPU-time counter such as
    :func:`tree_cpu_s`) has not changed for ``stall_s`` seconds, or ``ceiling_s``
    passed in all (a bound on a livelock, far beyond any loaded run). It measures at
    most once a second, so a test that polls often adds little CPU of its own.
    """

    def __init__(
        self, measure: Callable[[], object], *, stall_s: float = HANG_S, ceiling_s: float = 1800.0
    ) -> None:
        self._measure = measure
        self._stall_s = stall_s
        now = time.monotonic()
        self._ceiling = now + ceiling_s
        self._last = measure()
        self._moved = self._measured = now

    def expired(self) -> bool:
        """Whether the work stalled (or the ceiling passed); call it between polls."""
        now = time.monotonic()
        if now - self._measured >= 1.0:
            self._measured, value = now, self._measure()
            if value != self._last:
                self._last, self._moved = value, now
        return now > self._ceiling or now - self._moved > self._stall_s


def live_children() -> set[int]:
    """The pids of this process's child processes that are not zombies (read from ``/proc``)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.add(int(entry))
    return found
