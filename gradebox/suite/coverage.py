"""Coverage of the input space: does the suite try the inputs that usually break code?

Four questions per task, each answered ``present`` (with the cases that show
it), ``absent`` or ``n/a``, from the arguments and the signature only. A
question is answered ``present`` only on evidence in the cases, never guessed.

============  ===================================================================
empty         an argument is an empty ``str``/``bytes``/container. ``n/a`` when
              no parameter can be sized (annotated, or only ever given, numbers,
              bools or None)
boundary      a number in {-1, 0, 1} or a ``str``/``bytes``/container of length 1
large         a value of size >= 1000 (length, counted recursively through
              containers) or a number with magnitude >= 10**6
wrong_type    an argument that its annotation does not admit (type-strict: a
              bool is not an int; an int is a float, as in PEP 484); for a
              parameter without a usable annotation, a case that expects an
              error and passes a type no other case passes there
============  ===================================================================
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gradebox.suite.signature import Signature
from sandbox.types import HiddenCase

__all__ = ["LARGE_MAGNITUDE", "LARGE_SIZE", "Coverage", "CoverageItem", "assess_coverage"]

CoverageStatus = Literal["present", "absent", "n/a"]
"""The answer to one coverage question."""

LARGE_SIZE = 1000
"""Size (recursive length) from which an input counts as large."""
LARGE_MAGNITUDE = 10**6
"""Magnitude from which a number counts as large."""

_SIZED = (str, bytes, list, tuple, dict, set, frozenset)
_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (float, int),
    "complex": (complex, float, int),
    "bool": (bool,),
    "str": (str,),
    "bytes": (bytes,),
    "list": (list,),
    "List": (list,),
    "tuple": (tuple,),
    "Tuple": (tuple,),
    "dict": (dict,),
    "Dict": (dict,),
    "Mapping": (dict,),
    "set": (set,),
    "Set": (set,),
    "frozenset": (frozenset,),
    "FrozenSet": (frozenset,),
    "Sequence": (list, tuple, str, bytes),
    "Iterable": (list, tuple, str, bytes, dict, set, frozenset),
    "None": (type(None),),
}
_ITEMS = frozenset({"list", "List", "set", "Set", "frozenset", "FrozenSet", "Sequence", "Iterable"})


@dataclass(frozen=True, slots=True)
class CoverageItem:
    """The answer to one coverage question."""

    status: CoverageStatus
    """``present``, ``absent`` or ``n/a``."""
    cases: tuple[int, ...] = ()
    """Indices (within the task) of the cases that show it."""
    note: str = ""
    """Why ``n/a``, or what was looked for."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"status": self.status, "cases": list(self.cases), "note": self.note}


@dataclass(frozen=True, slots=True)
class Coverage:
    """The four coverage answers of one task."""

    empty: CoverageItem
    """An empty input."""
    boundary: CoverageItem
    """A boundary value."""
    large: CoverageItem
    """A large input."""
    wrong_type: CoverageItem
    """An input of the wrong type."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "empty": self.empty.to_json(),
            "boundary": self.boundary.to_json(),
            "large": self.large.to_json(),
            "wrong_type": self.wrong_type.to_json(),
        }


def assess_coverage(cases: Sequence[HiddenCase], signature: Signature) -> Coverage:
    """Answer the four coverage questions for one task's cases.

    Args:
        cases: The task's hidden cases, in order.
        signature: The task's signature (annotations, parameter names).

    Returns:
        The answers, with the cases that show each ``present``.
    """
    bound = [list(_bind(case, signature)) for case in cases]
    return Coverage(
        empty=_empty(bound, signature),
        boundary=_item(
            [i for i, args in enumerate(bound) if any(_is_boundary(v) for _, v in args)],
            "a number in {-1, 0, 1} or a value of length 1",
        ),
        large=_item(
            [i for i, args in enumerate(bound) if any(_is_large(v) for _, v in args)],
            f"a value of size >= {LARGE_SIZE} or magnitude >= 10**6",
        ),
        wrong_type=_wrong_type(cases, bound, signature),
    )


def _bind(case: HiddenCase, signature: Signature) -> Iterator[tuple[str, Any]]:
    for i, value in enumerate(case.args):
        yield (signature.params[i] if i < len(signature.params) else f"#{i}"), value
    yield from case.kwargs.items()


def _item(found: list[int], looked_for: str) -> CoverageItem:
    if found:
        return CoverageItem("present", tuple(found), looked_for)
    return CoverageItem("absent", (), f"no case has {looked_for}")


def _empty(bound: list[list[tuple[str, Any]]], signature: Signature) -> CoverageItem:
    found = [i for i, args in enumerate(bound) if any(_is_empty(v) for _, v in args)]
    if found:
        return _item(found, "an empty str, bytes or container")
    keys = {key for args in bound for key, _ in args} | set(signature.params)
    if keys and not any(_can_be_sized(key, bound, signature) for key in keys):
        return CoverageItem("n/a", (), "no parameter can be empty")
    return _item([], "an empty str, bytes or container")


def _can_be_sized(key: str, bound: list[list[tuple[str, Any]]], signature: Signature) -> bool:
    ann = _annotation(signature, key)
    if ann is not None:
        types = _outer_types(ann)
        if types is not None:
            return any(t in _SIZED for t in types)
    return any(isinstance(v, _SIZED) for args in bound for k, v in args if k == key)


def _is_empty(value: Any) -> bool:
    return type(value) in _SIZED and len(value) == 0


def _is_boundary(value: Any) -> bool:
    if type(value) in (int, float):
        return bool(value in (-1, 0, 1))
    return type(value) in _SIZED and len(value) == 1


def _is_large(value: Any) -> bool:
    if type(value) in (int, float):
        return bool(abs(value) >= LARGE_MAGNITUDE)
    return _size(value, LARGE_SIZE) >= LARGE_SIZE


def _size(value: Any, limit: int) -> int:
    """Length counted through containers, stopping once ``limit`` is reached."""
    if type(value) in (str, bytes):
        return len(value)
    if type(value) not in _SIZED:
        return 0
    items = list(value.items()) if isinstance(value, dict) else list(value)
    total = len(items)
    for item in items:
        if total >= limit:
            break
        total += _size(item, limit - total)
    return total


def _wrong_type(
    cases: Sequence[HiddenCase], bound: list[list[tuple[str, Any]]], signature: Signature
) -> CoverageItem:
    usual: dict[str, type] = {}
    by_key: dict[str, Counter[type]] = {}
    for args in bound:
        for key, value in args:
            by_key.setdefault(key, Counter())[type(value)] += 1
    for key, counter in by_key.items():
        usual[key] = counter.most_common(1)[0][0]
    found = []
    for i, args in enumerate(bound):
        for key, value in args:
            ann = _annotation(signature, key)
            verdict = _matches(value, ann) if ann is not None else None
            odd = verdict is None and cases[i].error is not None and type(value) is not usual[key]
            if verdict is False or odd:
                found.append(i)
                break
    return _item(found, "an argument of a type the signature does not admit")


def _annotation(signature: Signature, key: str) -> ast.expr | None:
    text = signature.annotations.get(key)
    if text is None:
        return None
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    return None


def _outer_types(ann: ast.expr) -> tuple[type, ...] | None:
    """The types an annotation admits at the top level; None when unknown."""
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        left, right = _outer_types(ann.left), _outer_types(ann.right)
        return None if left is None or right is None else left + right
    base = ann.value if isinstance(ann, ast.Subscript) else ann
    name = _name(base)
    if name in ("Optional", "Union") and isinstance(ann, ast.Subscript):
        parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        found: tuple[type, ...] = (type(None),) if name == "Optional" else ()
        for part in parts:
            inner = _outer_types(part)
            if inner is None:
                return None
            found += inner
        return found
    return _TYPES.get(name or "")


def _matches(value: Any, ann: ast.expr) -> bool | None:
    """Whether ``value`` fits the annotation (one level into containers); None if unknown."""
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _any_of([_matches(value, ann.left), _matches(value, ann.right)])
    base = ann.value if isinstance(ann, ast.Subscript) else ann
    name = _name(base)
    if name in ("Any", "object"):
        return True
    if isinstance(ann, ast.Subscript) and name in ("Optional", "Union"):
        parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        verdicts: list[bool | None] = [value is None] if name == "Optional" else []
        return _any_of(verdicts + [_matches(value, p) for p in parts])
    types = _TYPES.get(name or "")
    if types is None:
        return None
    if type(value) not in types:
        return False
    if isinstance(ann, ast.Subscript) and name in _ITEMS and not isinstance(ann.slice, ast.Tuple):
        return _all_of([_matches(item, ann.slice) for item in value])
    return True


def _any_of(verdicts: list[bool | None]) -> bool | None:
    if any(v is True for v in verdicts):
        return True
    return None if any(v is None for v in verdicts) else False


def _all_of(verdicts: list[bool | None]) -> bool | None:
    if any(v is False for v in verdicts):
        return False
    return None if any(v is None for v in verdicts) else True
