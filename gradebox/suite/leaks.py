"""Prompt leaks: hidden cases that the public prompt already shows.

A hidden case whose arguments *and* expected result appear in ``public.jsonl``
grades recall, not the ability to solve the task. Two places are searched:

- the task's public ``examples``: same arguments, keyword arguments and
  expected value (type-strict, within the case's ``tol``) or the same error;
- the ``spec`` text: the call written out (``fib(0)``, with the arguments as
  Python literals or as JSON) followed by the expected value (or the error's
  name), with only a connector between them (``==``, ``->``, ``returns``,
  ``raises``...). Whitespace inside the call and the value is ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gradebox.suite.stubs import literal
from sandbox.cases import resolve_error_name
from sandbox.child.wire import WireError, from_wire, to_wire
from sandbox.compare import values_equal
from sandbox.types import HiddenCase, PublicTask

__all__ = ["Leak", "find_leaks"]

#: What may stand between a call and its result in a spec. Possessive (``*+``), so a
#: long run of ``=`` cannot make the search backtrack.
_CONNECTOR = (
    r"(?:\s|==|=>|->|\u2192|=|:|,|\b(?:is|returns?|gives|equals|yields|raises?|should|be|must)\b)*+"
)


@dataclass(frozen=True, slots=True)
class Leak:
    """A hidden case that appears in the public prompt."""

    case: int
    """Index of the case within its task."""
    line: int
    """Its line in the hidden file."""
    where: Literal["example", "spec"]
    """Where it was found."""
    example: int | None = None
    """Index of the matching public example, for ``where == "example"``."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"case": self.case, "line": self.line, "where": self.where, "example": self.example}


def find_leaks(fn: str, cases: Sequence[HiddenCase], public: PublicTask | None) -> list[Leak]:
    """Hidden cases of one task that appear verbatim in its public description.

    Args:
        fn: The task name.
        cases: The task's hidden cases, in order.
        public: The task's public description (None: nothing can leak).

    Returns:
        One leak per leaked case (an example match wins over a spec match).
    """
    if public is None:
        return []
    examples = list(_decoded_examples(public.examples))
    spec = public.spec
    leaks = []
    for i, case in enumerate(cases):
        hit = next((k for k, ex in examples if _same(case, ex)), None)
        if hit is not None:
            leaks.append(Leak(i, case.line, "example", hit))
        elif spec and _in_spec(fn, case, spec):
            leaks.append(Leak(i, case.line, "spec"))
    return leaks


@dataclass(frozen=True, slots=True)
class _Example:
    args: list[Any]
    kwargs: dict[str, Any]
    expect: Any
    error: str | None


def _decoded_examples(raw: Sequence[dict[str, Any]]) -> Iterator[tuple[int, _Example]]:
    for k, example in enumerate(raw):
        try:
            args = from_wire(example.get("args", []), allow_opaque=False)
            kwargs = from_wire(example.get("kwargs", {}), allow_opaque=False)
            expect = (
                from_wire(example["expect"], allow_opaque=False) if "expect" in example else None
            )
            error = resolve_error_name(example["error"]) if "error" in example else None
        except (WireError, ValueError, TypeError):
            continue  # the public loader reports bad examples; here they just cannot match
        if "expect" in example or error is not None:
            yield k, _Example(list(args), dict(kwargs), expect, error)


def _same(case: HiddenCase, ex: _Example) -> bool:
    if not values_equal(list(case.args), ex.args) or not values_equal(case.kwargs, ex.kwargs):
        return False
    if case.error is not None or ex.error is not None:
        return case.error == ex.error
    return values_equal(case.expect, ex.expect, tol=case.tol)


def _in_spec(fn: str, case: HiddenCase, spec: str) -> bool:
    calls = "|".join(_loose(c) for c in _call_texts(fn, case))
    results = "|".join(_loose(r) for r in _result_texts(case))
    if not calls or not results:
        return False
    pattern = rf"(?<![\w.])(?:{calls}){_CONNECTOR}(?:{results})(?!\w|\.\d)"
    return re.search(pattern, spec) is not None


def _loose(text: str) -> str:
    """A pattern for ``text`` that allows any whitespace between its characters."""
    return r"\s*".join(re.escape(ch) for ch in text if not ch.isspace())


def _call_texts(fn: str, case: HiddenCase) -> set[str]:
    forms = set()
    for render in (literal, _json):
        try:
            parts = [render(a) for a in case.args]
            parts += [f"{k}={render(v)}" for k, v in case.kwargs.items()]
        except (TypeError, ValueError):
            continue
        forms.add(f"{fn}({','.join(parts)})")
    return forms


def _result_texts(case: HiddenCase) -> set[str]:
    if case.error is not None:
        return {case.error.rsplit(".", 1)[-1]}
    forms = set()
    for render in (literal, _json):
        try:
            forms.add(render(case.expect))
        except (TypeError, ValueError):
            continue
    return forms


def _json(value: Any) -> str:
    return json.dumps(to_wire(value), ensure_ascii=False)
