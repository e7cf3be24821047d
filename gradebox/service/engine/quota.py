"""Per-token limits: synchronous grade slots, and a grading rate per token and task.

Both live in memory (a restart forgets them, which only ever lets more through
once). The rate is a token bucket per ``(token, task)``: ``burst`` samples at
once, refilled at ``per_minute``. It is what bounds how fast a client that
submits code can learn a task's hidden cases through its rows and timing; the
queue quotas (runs and samples per token) are in :meth:`Store.add_run`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping

from gradebox.service.problems import ApiError

__all__ = ["GradeSlots", "RateLimiter"]


def _too_many(detail: str, retry_after: float) -> ApiError:
    return ApiError(429, detail, headers={"Retry-After": str(max(1, math.ceil(retry_after)))})


class GradeSlots:
    """Synchronous grades in flight, per token and over all tokens."""

    def __init__(self, per_token: int, total: int, retry_after_s: int) -> None:
        """At most ``per_token`` for one token and ``total`` for all at once."""
        self._per_token, self._max, self._retry = per_token, total, retry_after_s
        self._lock = threading.Lock()
        self._inflight: dict[str, int] = {}
        self._total = 0

    @property
    def total(self) -> int:
        """Synchronous grades in flight over all tokens."""
        with self._lock:
            return self._total

    def acquire(self, token_id: str) -> None:
        """Take a slot for a token.

        Raises:
            ApiError: 429 when the token or the server has too many grades in flight.
        """
        with self._lock:
            mine = self._inflight.get(token_id, 0)
            if mine >= self._per_token or self._total >= self._max:
                raise _too_many("too many grades in flight", self._retry)
            self._inflight[token_id] = mine + 1
            self._total += 1

    def release(self, token_id: str) -> None:
        """Give a slot back (when the grade really finished, not at its deadline)."""
        with self._lock:
            self._total -= 1
            left = self._inflight.get(token_id, 1) - 1
            if left:
                self._inflight[token_id] = left
            else:
                self._inflight.pop(token_id, None)


class RateLimiter:
    """A token bucket per ``(token, task)``; ``per_minute <= 0`` switches it off."""

    def __init__(
        self, per_minute: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Allow ``burst`` samples at once per token and task, refilled at ``per_minute``."""
        self._rate = per_minute / 60.0
        self._burst = float(burst)
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}

    def take(self, token_id: str, wanted: Mapping[str, int]) -> None:
        """Take ``wanted[fn]`` samples from each of the token's task buckets, all or none.

        Raises:
            ApiError: 413 when more samples of one task are asked for than ever fit
                (``burst``); 429 with ``Retry-After`` when they fit later.
        """
        if self._rate <= 0:
            return
        with self._lock:
            now = self._clock()
            levels = {fn: self._level(token_id, fn, now) for fn in wanted}
            short = {fn: n - levels[fn] for fn, n in wanted.items() if n > levels[fn]}
            if any(wanted[fn] > self._burst for fn in short):
                raise ApiError(
                    413, f"too many samples of one task: this server grades at most "
                    f"{int(self._burst)} of a task at once per token",
                )  # fmt: skip
            if short:
                wait = max(short.values()) / self._rate
                raise _too_many("grading rate limit reached for this token and task", wait)
            for fn, n in wanted.items():
                self._buckets[(token_id, fn)] = (levels[fn] - n, now)
            if len(self._buckets) > 100_000:
                self._forget_full(now)

    def give_back(self, token_id: str, wanted: Mapping[str, int]) -> None:
        """Return samples taken by :meth:`take` for work that was refused after all."""
        if self._rate <= 0:
            return
        with self._lock:
            now = self._clock()
            for fn, n in wanted.items():
                level = min(self._burst, self._level(token_id, fn, now) + n)
                self._buckets[(token_id, fn)] = (level, now)

    def _level(self, token_id: str, fn: str, now: float) -> float:
        level, then = self._buckets.get((token_id, fn), (self._burst, now))
        return min(self._burst, level + (now - then) * self._rate)

    def _forget_full(self, now: float) -> None:
        """Drop buckets that refilled (the same as absent), so memory stays bounded."""
        for key, (level, then) in list(self._buckets.items()):
            if level + (now - then) * self._rate >= self._burst:
                del self._buckets[key]
