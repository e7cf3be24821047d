"""How much an import may build and write: cases and bytes per row and per file.

A benchmark file is hostile input (``SECURITY.md``, Benchmark files). A few bytes
of it can stand for far more: a zlib stream, pickle memo references to one big
value, ``[[],[],...]`` (each empty list costs 30 times its two characters in
memory), a test program that repeats its setup in every check. So every step
that decodes a row (the line's JSON, a field's JSON, base64, zlib, the pickle,
the JSON text it holds, the code parsed with :mod:`ast`) builds at most
``row_bytes``, counting :data:`OBJECT_COST` bytes for every value it makes
besides the text the value holds; what the row's task writes (its lines,
UTF-8) is measured before anything is written, and its cases are counted. A row
over a bound raises :class:`TooLarge` and is skipped whole: its reason goes in
the import report, nothing of it is written. The file has the same two bounds
in total: its rows decoded, the source read (decompressed), everything written.

Example:
    >>> loads_json('[1, [2]]', 1000, "tests")
    [1, [2]]
    >>> try:
    ...     loads_json("[[], []]", 100, "tests")
    ... except TooLarge as exc:
    ...     print(exc)
    tests: decodes to about 328 bytes, more than --max-row-bytes (100)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AST_COST",
    "DEFAULT_BOUNDS",
    "OBJECT_COST",
    "Bounds",
    "FileTally",
    "GiB",
    "MiB",
    "TooLarge",
    "check_code",
    "json_cost",
    "loads_json",
    "row_bytes_message",
    "row_cases_check",
    "row_cases_message",
]

MiB = 1024**2
GiB = 1024**3

OBJECT_COST = 64
"""Bytes counted for each value or container a decoder builds (about its cost in memory)."""

AST_COST = 4 * OBJECT_COST
"""Bytes counted for each character of code parsed with :mod:`ast` (its syntax tree)."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """The bounds of one import (``gradebox import --max-row-cases ...``)."""

    row_cases: int = 10_000
    """Cases one row (one task) may have."""
    row_bytes: int = 512 * MiB
    """Bytes one row may decode to at any step, and write in all (its lines, UTF-8)."""
    file_cases: int = 1_000_000
    """Cases the whole import may write."""
    file_bytes: int = 4 * GiB
    """Bytes the source may be (decompressed), its rows decode to, and the import may write."""

    def to_json(self) -> dict[str, int]:
        """The bounds as the import report lists them."""
        return {
            "row_cases": self.row_cases,
            "row_bytes": self.row_bytes,
            "file_cases": self.file_cases,
            "file_bytes": self.file_bytes,
        }


DEFAULT_BOUNDS = Bounds()
"""The bounds ``gradebox import`` applies unless told otherwise."""


class TooLarge(Exception):
    """A row, or one step of decoding it, is over a bound.

    Raised by the decoders and builders of :mod:`gradebox.benchmarks`; caught by
    the reader or :func:`gradebox.benchmarks.import_benchmark`, which skip the
    row (the message is the reason in the import report). Not a
    :class:`ValueError`, so that no ``except ValueError`` meant for malformed
    input swallows it.
    """


def row_bytes_message(what: str, detail: str, limit: int) -> str:
    """``what: detail, more than --max-row-bytes (limit)``."""
    return f"{what}: {detail}, more than --max-row-bytes ({limit})"


def row_cases_message(cases: int, limit: int) -> str:
    """``N cases, more than --max-row-cases (limit)``."""
    return f"{cases} cases, more than --max-row-cases ({limit})"


def row_cases_check(cases: int, bounds: Bounds) -> None:
    """Raise :class:`TooLarge` when ``cases`` is over ``bounds.row_cases``."""
    if cases > bounds.row_cases:
        raise TooLarge(row_cases_message(cases, bounds.row_cases))


# A JSON string: its structure characters are text, not structure. An unterminated one runs
# to the end (the closing quote is optional): JSON parses nothing after it, and a pattern
# that had to backtrack from every opening quote to the end would take quadratic time.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_STRUCTURE = "[{,:"


def json_cost(text: str) -> int:
    """What decoding ``text`` as JSON builds: its length, and :data:`OBJECT_COST` a value.

    A value is counted at each ``[``, ``{``, ``,`` and ``:`` outside strings (every
    value but the first follows one of them). Counting them inside strings too is
    fast and over-counts only text: strings are left out (a slower scan) only when
    that count is more than the text itself.
    """
    fast = len(text) + OBJECT_COST * (1 + sum(map(text.count, _STRUCTURE)))
    if fast <= 2 * len(text) + OBJECT_COST:
        return fast
    outside = _STRING.sub("", text)
    return len(text) + OBJECT_COST * (1 + sum(map(outside.count, _STRUCTURE)))


def loads_json(text: str, limit: int, what: str) -> Any:
    """``json.loads(text)`` when what it builds (:func:`json_cost`) is within ``limit`` bytes.

    Raises:
        TooLarge: It would build more (nothing is decoded).
        ValueError: It is not JSON.
        RecursionError: It is nested too deeply.
    """
    if len(text) > limit:
        raise TooLarge(row_bytes_message(what, f"{len(text)} bytes", limit))
    cost = json_cost(text)
    if cost > limit:
        raise TooLarge(row_bytes_message(what, f"decodes to about {cost} bytes", limit))
    return json.loads(text)


def check_code(limit: int, **code: str) -> None:
    """Raise :class:`TooLarge` when parsing the ``code`` fields would build more than ``limit``.

    The syntax tree of code costs about :data:`AST_COST` bytes a character.
    """
    chars = sum(len(c) for c in code.values())
    if chars * AST_COST > limit:
        names = "+".join(code)
        detail = f"{chars} characters of code (about {chars * AST_COST} bytes parsed)"
        raise TooLarge(row_bytes_message(names, detail, limit))


@dataclass(slots=True)
class FileTally:
    """What an import has taken of its file's bounds so far."""

    bounds: Bounds
    """The bounds."""
    cases: int = field(default=0)
    """Cases admitted."""
    written: int = field(default=0)
    """Bytes admitted (the lines of the tasks admitted)."""

    def admit(self, cases: int, written: int) -> str | None:
        """Count a row's ``cases`` and ``written`` bytes; ``None``, or why the row does not fit."""
        if self.cases + cases > self.bounds.file_cases:
            return (
                f"{cases} cases would take the import past --max-file-cases "
                f"({self.bounds.file_cases}): {self.cases} admitted before it"
            )
        if self.written + written > self.bounds.file_bytes:
            return (
                f"{written} bytes would take the import past --max-file-bytes "
                f"({self.bounds.file_bytes}): {self.written} admitted before it"
            )
        self.cases += cases
        self.written += written
        return None
