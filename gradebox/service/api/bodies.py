"""Request bodies: read within a size and a time limit, parsed strictly within a budget.

Reading (:func:`read_body`) runs on the event loop but only awaits: a body
larger than the limit is refused as soon as it is (413), and one that does not
arrive in time is refused (408), so a client sending a byte a second holds a
connection for a bounded time and never a grade slot (slots are taken after
the body is read and checked).

Parsing and checking (:func:`parse_json`, :func:`parse_samples_body`, then the
schemas) are CPU work: request handlers run them in a worker thread
(:func:`off_loop`; a grade body in the thread that then grades it, see
:mod:`..engine.sync`) under a :class:`Budget` that is checked between samples and
every few hundred JSON objects (413 past it). A run body is parsed one sample
at a time and refused as soon as it holds one sample more than the cap, so a
huge body costs the cap, not its size.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any, NoReturn, TypeVar

import anyio
import anyio.to_thread
from fastapi import Request

from gradebox.service.problems import ApiError, Problem

__all__ = ["Budget", "off_loop", "parse_json", "parse_samples_body", "read_body"]

_T = TypeVar("_T")
_WS = re.compile(r"[ \t\n\r]*")


class _BadJsonError(ValueError):
    pass


async def read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The body, refusing it (413) as soon as it is longer than ``limit`` bytes.

    Raises:
        ApiError: 413 when too large; 408 when it has not all arrived in ``timeout_s``.
    """
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise ApiError(413, f"request body too large: at most {limit} bytes")
    chunks, size = [], 0
    with anyio.move_on_after(timeout_s) as scope:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ApiError(413, f"request body too large: at most {limit} bytes")
            chunks.append(chunk)
    if scope.cancelled_caught:
        raise ApiError(408, f"request body not received within {timeout_s:g} s")
    return b"".join(chunks)


async def off_loop(fn: Callable[..., _T], *args: object, limiter: anyio.CapacityLimiter) -> _T:
    """Run CPU work in a worker thread, so the event loop keeps answering other clients."""
    return await anyio.to_thread.run_sync(fn, *args, limiter=limiter)


class Budget:
    """CPU time for parsing and checking one body (cooperative: checked by :meth:`tick`).

    What a body costs is the CPU its parse and check take, so that is what is
    counted (the thread's own CPU time): a busy or stalled host, or other threads
    holding the GIL, make a parse slower, not the body costlier, and refuse no
    client. A wall-clock backstop of :data:`WALL_FACTOR` times the budget still ends
    a parse that is starved for that long, so the server's few parser threads are
    never held for long by a flood of costly bodies.
    """

    WALL_FACTOR = 4.0

    def __init__(self, seconds: float) -> None:
        """Allow ``seconds`` of this thread's CPU from now (and four times that of wall)."""
        self._cpu_end = time.thread_time() + seconds
        self._wall_end = time.monotonic() + seconds * self.WALL_FACTOR
        self._seconds = seconds
        self._count = 0

    def tick(self) -> None:
        """Raise once the budget is spent.

        Raises:
            ApiError: 413, the body is too costly to parse and check.
        """
        if time.thread_time() > self._cpu_end or time.monotonic() > self._wall_end:
            raise ApiError(
                413,
                f"the body could not be parsed and checked within {self._seconds:g} s of CPU: "
                "send fewer or smaller samples",
            )

    def often(self) -> None:
        """:meth:`tick`, but only every 256th call (for per-object hooks)."""
        self._count += 1
        if self._count % 256 == 0:
            self.tick()


# ------------------------------------------------------------------------ JSON


def _decoder(budget: Budget | None) -> json.JSONDecoder:
    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, object]:
        if budget is not None:
            budget.often()
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                raise _BadJsonError("invalid JSON: an object has a duplicate key")
            obj[key] = value
        return obj

    return json.JSONDecoder(
        object_pairs_hook=unique_keys, parse_constant=_no_constant, parse_float=_finite
    )


def _no_constant(_name: str) -> NoReturn:
    raise _BadJsonError('invalid JSON: NaN and Infinity are not JSON; use {"$float": "nan"}')


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadJsonError("invalid JSON: a number is out of range for a float")
    return value


def _strict(decode: Callable[[], _T], *, escapes: bool = True) -> _T:
    """Run one decode, mapping every way it can fail to a 422 with a position.

    ``escapes``: the text may hold a ``u`` escape (without one, text decoded from
    strict UTF-8 cannot hold a lone surrogate, and the check is skipped).
    """
    try:
        value = decode()
        if escapes:
            # "\ud800" parses to a lone surrogate, which cannot be stored or sent on as UTF-8.
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError:
        problem = Problem("", "invalid JSON: a string escapes a lone surrogate (not Unicode)")
    except json.JSONDecodeError as exc:
        problem = Problem("", f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno)
    except _BadJsonError as exc:
        problem = Problem("", str(exc))
    except RecursionError:
        problem = Problem("", "invalid JSON: nested too deeply")
    except ValueError:  # an int beyond the interpreter's digit limit
        problem = Problem("", "invalid JSON: a number is too large")
    raise ApiError(422, "the body is not valid JSON", [problem])


def _utf8(raw: bytes) -> str:
    try:
        return raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(
            422, "the body is not valid UTF-8", [Problem("", f"invalid UTF-8 at byte {exc.start}")]
        ) from exc


def parse_json(raw: bytes, budget: Budget | None = None) -> Any:
    """Parse a body strictly: UTF-8, no duplicate keys, no NaN/Infinity.

    Raises:
        ApiError: 422 with the line and column of the first problem; 413 past ``budget``.
    """
    text = _utf8(raw)
    decoder = _decoder(budget)
    return _strict(lambda: decoder.decode(text), escapes="\\u" in text)


def parse_samples_body(raw: bytes, *, max_items: int, budget: Budget) -> list[Any]:
    """A run body: a JSON array, or JSON Lines (one sample a line, blank lines ignored).

    Parsing stops at sample ``max_items + 1``: the rest of the body is never parsed.

    Raises:
        ApiError: 413 with more than ``max_items`` samples or past ``budget``;
            422 naming the line of the first bad JSON line.
    """
    text = _utf8(raw)
    decoder = _decoder(budget)
    items: list[Any] = []
    if text.lstrip().startswith("["):
        for item in _array(text, decoder):
            items.append(item)
            _count(items, max_items, budget)
        return items
    problems = []
    for number, line in _lines(text):
        try:
            items.append(_strict(partial(decoder.decode, line)))
        except ApiError as exc:
            first = exc.problems[0]
            problems.append(replace(first, pointer=f"/{len(items)}", line=number))
            items.append(None)
        _count(items, max_items, budget)
    if problems:
        raise ApiError(422, "a line of the body is not valid JSON", problems)
    return items


def _count(items: list[Any], max_items: int, budget: Budget) -> None:
    if len(items) > max_items:
        raise ApiError(413, f"too many samples: at most {max_items} per run")
    budget.tick()


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their numbers, found one at a time (no list of every line)."""
    start, number = 0, 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        number += 1
        line = text[start:end]
        if line.strip():
            yield number, line
        start = end + 1


def _array(text: str, decoder: json.JSONDecoder) -> Iterator[Any]:
    """The elements of a JSON array, decoded one at a time."""
    pos = _skip(text, _skip(text, 0) + 1)  # past the "["
    if not text.startswith("]", pos):
        while True:
            item, pos = _strict(partial(decoder.raw_decode, text, pos))
            yield item
            pos = _skip(text, pos)
            if text.startswith("]", pos):
                break
            if not text.startswith(",", pos):
                _strict(partial(_fail, "Expecting ',' delimiter", text, pos))
            pos = _skip(text, pos + 1)
    end = _skip(text, pos + 1)
    if end != len(text):
        _strict(partial(_fail, "Extra data", text, end))


def _skip(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not JSON whitespace."""
    found = _WS.match(text, pos)
    return found.end() if found else pos


def _fail(msg: str, text: str, pos: int) -> NoReturn:
    raise json.JSONDecodeError(msg, text, pos)
