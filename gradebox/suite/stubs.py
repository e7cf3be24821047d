"""Naive stubs: code that knows nothing about the task and must fail the suite.

A suite that a stub passes measures nothing. The family, generated from the
signature and the cases (ids are stable):

==================  ===========================================================
``none``            ``return None``
``constant:<k>``    return the k-th most common expected value (ties: up to 3)
``first-arg``       return the first argument unchanged
``not-implemented`` ``raise NotImplementedError``
``pass``            a body of ``pass``
``empty``           return the empty (or zero) value of the return type:
                    ``[]``, ``()``, ``{}``, ``set()``, ``""``, ``b""``, ``0``,
                    ``0.0``, ``False``; the type comes from the return
                    annotation, else from the most common expected type
==================  ===========================================================
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gradebox.suite.signature import Signature
from sandbox.child.wire import to_wire
from sandbox.types import HiddenCase

__all__ = ["Stub", "literal", "make_stubs"]

#: Most tied "most common" constants turned into stubs.
MAX_CONSTANTS = 3

_EMPTY_BY_NAME = {
    "list": "[]",
    "List": "[]",
    "Sequence": "[]",
    "MutableSequence": "[]",
    "Iterable": "[]",
    "tuple": "()",
    "Tuple": "()",
    "dict": "{}",
    "Dict": "{}",
    "Mapping": "{}",
    "set": "set()",
    "Set": "set()",
    "frozenset": "frozenset()",
    "FrozenSet": "frozenset()",
    "str": '""',
    "bytes": 'b""',
    "int": "0",
    "float": "0.0",
    "bool": "False",
}
_EMPTY_BY_TYPE: dict[type, str] = {
    list: "[]",
    tuple: "()",
    dict: "{}",
    set: "set()",
    frozenset: "frozenset()",
    str: '""',
    bytes: 'b""',
    int: "0",
    float: "0.0",
    bool: "False",
}


@dataclass(frozen=True, slots=True)
class Stub:
    """One naive implementation."""

    id: str
    """Stable id: ``none``, ``constant:<k>``, ``first-arg``, ``not-implemented``, ``pass``..."""
    description: str
    """What it does, e.g. ``return True``."""
    code: str
    """Its source."""


def make_stubs(fn: str, signature: Signature, cases: Sequence[HiddenCase]) -> list[Stub]:
    """The stub family for one task; identical bodies are kept once.

    Args:
        fn: The function name.
        signature: The task's signature (for the header, first parameter and return type).
        cases: The task's hidden cases (for the common expected values and types).

    Returns:
        The stubs in the order of the table in the module docstring.
    """
    bodies: list[tuple[str, str, str]] = [("none", "return None", "return None")]
    for k, value in enumerate(_most_common(cases), start=1):
        text = literal(value)
        bodies.append((f"constant:{k}", f"return {_short(text)}", f"return {text}"))
    if signature.params:
        first = signature.params[0]
        bodies.append(("first-arg", f"return {first}", f"return {first}"))
    elif signature.header.endswith("(*args, **kwargs):"):
        bodies.append(("first-arg", "return args[0]", "return args[0]"))
    bodies.append(("not-implemented", "raise NotImplementedError", "raise NotImplementedError"))
    bodies.append(("pass", "pass", "pass"))
    empty = _empty(signature.returns, cases)
    if empty is not None:
        bodies.append(("empty", f"return {empty}", f"return {empty}"))
    stubs: list[Stub] = []
    seen: set[str] = set()
    for stub_id, description, body in bodies:
        if body in seen:
            continue
        seen.add(body)
        stubs.append(Stub(stub_id, description, f"{signature.header}\n    {body}\n"))
    return stubs


def literal(value: Any) -> str:
    """Python source that evaluates to ``value`` (plain wire data only).

    Example:
        >>> literal((1, {2.5}, float("nan")))
        "(1, {2.5}, float('nan'))"
    """
    t = type(value)
    if value is None or t in (bool, str, bytes):
        return repr(value)
    if t is int:
        return repr(value) if abs(value) < 2**64 else hex(value)
    if t is float:
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if t is list:
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if t is tuple:
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if t is dict:
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if t in (set, frozenset):
        inner = "{" + ", ".join(literal(v) for v in value) + "}" if value else ""
        return f"{t.__name__}({inner})"
    raise TypeError(f"literal: {t.__name__} is not plain wire data")


def _most_common(cases: Sequence[HiddenCase]) -> list[Any]:
    """The most common expected values (ties in file order, at most ``MAX_CONSTANTS``)."""
    keys: list[str] = []
    values: dict[str, Any] = {}
    for case in cases:
        if case.error is not None:
            continue
        key = json.dumps(to_wire(case.expect), sort_keys=True)
        values.setdefault(key, case.expect)
        keys.append(key)
    if not keys:
        return []
    counts = Counter(keys)
    top = max(counts.values())
    ordered = list(dict.fromkeys(k for k in keys if counts[k] == top))
    return [values[k] for k in ordered[:MAX_CONSTANTS]]


def _empty(returns: str | None, cases: Sequence[HiddenCase]) -> str | None:
    if returns is not None:
        first = next((p for p in returns.split("|") if p.strip() != "None"), returns)
        base = first.split("[", 1)[0].split(".")[-1].strip()
        return _EMPTY_BY_NAME.get(base)
    types = Counter(type(c.expect) for c in cases if c.error is None)
    if not types:
        return None
    return _EMPTY_BY_TYPE.get(types.most_common(1)[0][0])


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."
