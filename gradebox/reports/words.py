"""What a row's tags mean, in words a reviewer reads: outcomes, verdict reasons, values.

Rows carry closed vocabularies (``not_raised``, ``gate:syntax``) and tagged JSON
(``{"$tuple": [...]}``, ``{"timeout": "case time limit"}``); a report shows
neither raw. Each vocabulary has one table here, keyed by the ``Literal`` the
rows are checked against, and a test walks every tag of each so a new tag
without words fails.

Values (arguments, expected and actual results of ``--explain``) are shown as
Python would print them, bounded by :mod:`reprlib` (the standard library's
size-limited ``repr``), never longer than :data:`VALUE_CAP` characters.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any, Final

from gradebox.verdict import Reason
from sandbox.child.wire import Opaque, WireError, from_wire
from sandbox.types import CaseOutcome, ObservationStatus

__all__ = [
    "OBSERVED_WORDS",
    "OUTCOME_WORDS",
    "REASON_WORDS",
    "VALUE_CAP",
    "expected_words",
    "got_words",
    "value_words",
]

VALUE_CAP = 300
"""Longest value text a report shows (a candidate's result can be megabytes)."""

OUTCOME_WORDS: Final[Mapping[CaseOutcome, str]] = {
    "ok": "ok",
    "wrong": "wrong answer",
    "error": "unexpected exception",
    "not_raised": "expected exception not raised",
    "timeout": "timed out",
    "crash": "process died",
    "resource": "stopped at a resource cap",
    "not_run": "not run",
}
"""One hidden case's outcome (:data:`sandbox.types.CaseOutcome`) in words."""

OBSERVED_WORDS: Final[Mapping[ObservationStatus, str]] = {
    "returned": "returned",
    "raised": "raised",
    "unserializable": "returned a value that is not plain data",
    "timeout": "timed out",
    "crash": "the process died",
    "resource": "stopped at a cap on the process tree",
    "not_run": "not run",
}
"""What the sandbox saw for a case (the ``got`` of ``--explain``), in words."""

REASON_WORDS: Final[Mapping[Reason, str]] = {
    "ok": "every hidden case ok",
    "hidden_tests": "hidden cases failed",
    "gate:syntax": "syntax error",
    "gate:banned_import": "banned import",
    "contract": "not the code the task asks for",
    "claim_false": "false O(1) claim",
    "policy:static": "static findings over the policy",
    "judge:mismatch": "the judge disagrees",
    "judge:unscored": "the judge's reply could not be scored",
    "infra_error": "infrastructure error (not the candidate's fault)",
}
"""Why a sample has its verdict (:data:`gradebox.verdict.Reason`), in words."""


class _Repr(reprlib.Repr):
    """``reprlib`` bounds, plus the two values plain ``repr`` cannot show here."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxstring, self.maxlong, self.maxother = 4, 120, 60, 60
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 12
        self.maxdict = 8

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 10_000:  # past the interpreter's int-to-str digit limit
            return f"<int of {x.bit_length()} bits>"
        return super().repr_int(x, level)

    def repr_Opaque(self, x: Opaque, level: int) -> str:  # reprlib dispatches on the type name
        return f"<{x.type_name[:80]} object>"


_REPR = _Repr()


def _cap(text: str) -> str:
    return text if len(text) <= VALUE_CAP else text[: VALUE_CAP - 1] + "\u2026"


def value_words(wire: Any) -> str:
    """A tagged JSON value as Python prints it, bounded (``('a', 'b')`` for a ``$tuple``)."""
    try:
        value = from_wire(wire)
    except (WireError, ValueError, RecursionError):
        return _cap(repr(wire) if not isinstance(wire, str) else wire)
    return _cap(_REPR.repr(value))


def _exception(name: Any) -> str:
    text = str(name)
    return text.removeprefix("builtins.")


def expected_words(wire: Any) -> str:
    """The ``expect`` of an explained case: ``raises TypeError`` or the value."""
    if isinstance(wire, dict) and set(wire) == {"error"}:
        return _cap(f"raises {_exception(wire['error'])}")
    return value_words(wire)


def got_words(wire: Any, outcome: CaseOutcome) -> str:
    """The ``got`` of an explained case: the value returned, or what happened instead.

    ``got`` is either the returned value or a one-key object naming what the
    sandbox saw (``{"timeout": "case time limit"}``); the outcome tells them
    apart, so a candidate returning ``{"timeout": ...}`` still reads as a value.
    """
    if isinstance(wire, dict) and set(wire) == {"raised", "message"} and outcome == "error":
        message = str(wire["message"] or "")
        return _cap(f"raised {_exception(wire['raised'])}" + (f": {message}" if message else ""))
    if isinstance(wire, dict) and len(wire) == 1:
        ((key, detail),) = wire.items()
        if key in OBSERVED_WORDS and key not in ("returned", "raised") and _observed(key, outcome):
            words = OBSERVED_WORDS[key]
            return _cap(words + (f" ({detail})" if detail else ""))
    return "returned " + value_words(wire)


def _observed(key: str, outcome: CaseOutcome) -> bool:
    """Whether a one-key ``got`` is an observation (not a value) for this outcome."""
    if key == "unserializable":
        return outcome in ("wrong", "not_raised")
    return key == outcome
