"""The type-strict comparator and the mapping of observations to case outcomes.

Runs in the grader on plain data decoded by :func:`sandbox.child.wire.from_wire`;
it never runs candidate code (no ``__eq__`` of a candidate's class is ever
called: such objects arrive as :class:`~sandbox.child.wire.Opaque`).

Rules, at every depth:

- types must be identical (``type(a) is type(b)``): ``True`` is not ``1``,
  ``1`` is not ``1.0``, a list is not a tuple, a set is not a frozenset;
- dict keys and set elements match by type and value (``{1}`` is not
  ``{True}``, although Python says they are equal);
- ``tol`` applies only where both sides are floats (``abs(a - b) <= tol``),
  including floats inside containers and set elements, never to dict keys;
- ``nan`` matches only ``nan``, an infinity only the same infinity;
- an :class:`~sandbox.child.wire.Opaque` value equals nothing, itself included.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable
from typing import Any, Final

from sandbox.child.wire import Opaque
from sandbox.types import CaseResult, HiddenCase, Observation, RaisedInfo

__all__ = ["STDOUT_REL_TOL", "STDOUT_TOL", "judge_case", "stdout_equal", "values_equal"]

_SCALARS: Final = (type(None), bool, int, float, str, bytes)
_SEQUENCES: Final = (list, tuple)
_SETS: Final = (set, frozenset)


def values_equal(
    expected: Any, actual: Any, *, tol: float | None = None, rel_tol: float | None = None
) -> bool:
    """Compare two decoded values type-strictly.

    Args:
        expected: The expected value (plain data).
        actual: The candidate's value, as decoded from the wire.
        tol: Absolute tolerance, applied only where both sides are floats.
        rel_tol: Relative tolerance (as :func:`math.isclose`), likewise.

    Returns:
        Whether the values are equal under the module's rules.

    Raises:
        TypeError: If either side holds a type that is not plain wire data
            (a grader bug, never a candidate's fault).

    Example:
        >>> values_equal(1, True), values_equal([0.1 + 0.2], [0.3], tol=1e-9)
        (False, True)
    """
    tols = None if tol is None and rel_tol is None else (tol or 0.0, rel_tol or 0.0)
    return _equal(expected, actual, tols)


_Tol = tuple[float, float] | None
"""(absolute, relative) tolerance, or None for exact floats."""


def _equal(a: object, b: object, tol: _Tol) -> bool:
    _check_type(a)
    _check_type(b)
    if type(a) is not type(b) or type(a) is Opaque:
        return False
    if isinstance(a, float) and isinstance(b, float):
        return _floats_equal(a, b, tol)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y, tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return _dicts_equal(a, b, tol)
    if isinstance(a, set | frozenset) and isinstance(b, set | frozenset):
        return _sets_equal(a, b, tol)
    return a == b  # the same scalar type: None, bool, int, str, bytes


def _check_type(v: object) -> None:
    t = type(v)
    if t not in _SCALARS and t not in _SEQUENCES and t not in _SETS and t not in (dict, Opaque):
        raise TypeError(f"values_equal: {t.__module__}.{t.__qualname__} is not plain wire data")


def _floats_equal(a: float, b: float, tol: _Tol) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b) or tol is None:
        return a == b
    return _close(a, b, tol)


def _close(a: float, b: float, tol: tuple[float, float]) -> bool:
    """``math.isclose`` with both tolerances, or exact equality (the float sum can overflow)."""
    return a == b or math.isclose(a, b, rel_tol=tol[1], abs_tol=tol[0])


def _dicts_equal(a: dict[Any, Any], b: dict[Any, Any], tol: _Tol) -> bool:
    if len(a) != len(b):
        return False
    by_key = {_canon(k): v for k, v in b.items()}
    if len(by_key) != len(b):  # keys that only Python's == tells apart (several nan)
        return False
    for key, value in a.items():
        ck = _canon(key)
        if ck not in by_key or not _equal(value, by_key[ck], tol):
            return False
    return True


def _sets_equal(a: Iterable[Any], b: Iterable[Any], tol: _Tol) -> bool:
    """Compare set elements; with ``tol``, find a one-to-one matching."""
    if tol is None:
        return _canon_set(a) == _canon_set(b)
    a_floats, a_nested, a_exact = _split_for_tol(a)
    b_floats, b_nested, b_exact = _split_for_tol(b)
    return (
        _canon_set(a_exact) == _canon_set(b_exact)
        and _float_sets_equal(a_floats, b_floats, tol)
        and _match_all(a_nested, b_nested, tol)
    )


def _split_for_tol(items: Iterable[Any]) -> tuple[list[float], list[Any], list[Any]]:
    """Split set elements into plain floats, float-holding containers and the rest.

    Elements of different groups can never be equal (types must match at every
    depth), so each group is compared on its own.
    """
    floats: list[float] = []
    nested: list[Any] = []
    exact: list[Any] = []
    for item in items:
        if type(item) is float:
            floats.append(item)
        elif _holds_float(item):
            nested.append(item)
        else:
            exact.append(item)
    return floats, nested, exact


def _holds_float(v: object) -> bool:
    if type(v) is float:
        return True
    if isinstance(v, dict):
        return any(_holds_float(x) for x in v.values()) or any(_holds_float(k) for k in v)
    if isinstance(v, list | tuple | set | frozenset):
        return any(_holds_float(x) for x in v)
    return False


def _float_sets_equal(a: list[float], b: list[float], tol: tuple[float, float]) -> bool:
    """Match two sets of floats within ``tol``.

    nan and infinities must appear on both sides; finite values are paired in
    sorted order, which finds a matching within ``tol`` whenever one exists.
    """
    special_a = {_canon(x) for x in a if not math.isfinite(x)}
    special_b = {_canon(x) for x in b if not math.isfinite(x)}
    finite_a = sorted(x for x in a if math.isfinite(x))
    finite_b = sorted(x for x in b if math.isfinite(x))
    if special_a != special_b or len(finite_a) != len(finite_b):
        return False
    return all(_close(x, y, tol) for x, y in zip(finite_a, finite_b, strict=True))


def _match_all(a: list[Any], b: list[Any], tol: tuple[float, float]) -> bool:
    """Whether a perfect matching of ``a`` to ``b`` under ``_equal`` exists.

    Kuhn's augmenting paths: closeness within ``tol`` is not transitive, so a
    greedy pairing could miss a matching that exists.
    """
    if len(a) != len(b):
        return False
    edges = [[j for j, y in enumerate(b) if _equal(x, y, tol)] for x in a]
    owner: list[int | None] = [None] * len(b)
    return all(_augment(i, edges, owner) for i in range(len(a)))


def _augment(start: int, edges: list[list[int]], owner: list[int | None]) -> bool:
    """Find an alternating path from ``start`` to a free element and flip it.

    Iterative, so a large set cannot exhaust the interpreter's stack.
    """
    seen: set[int] = set()
    stack = [iter(edges[start])]
    path: list[tuple[int, int]] = []  # (left, right) pairs leading to the top frame
    left = start
    while stack:
        j = next((j for j in stack[-1] if j not in seen), None)
        if j is None:
            stack.pop()
            if path:
                left = path.pop()[0]
            continue
        seen.add(j)
        path.append((left, j))
        current = owner[j]
        if current is None:
            for i, k in path:
                owner[k] = i
            return True
        left = current
        stack.append(iter(edges[current]))
    return False


def _canon_set(items: Iterable[Any]) -> frozenset[Hashable]:
    return frozenset(_canon(x) for x in items)


def _canon(v: object) -> Hashable:
    """A hashable form that is equal only for type-strictly equal values.

    Every nan maps to one form, so nan matches nan; an Opaque maps to a fresh
    object, so it matches nothing.
    """
    _check_type(v)
    t = type(v)
    if isinstance(v, float) and math.isnan(v):
        return (float, "nan")
    if isinstance(v, list | tuple):
        return (t, tuple(_canon(x) for x in v))
    if isinstance(v, set | frozenset):
        return (t, _canon_set(v))
    if isinstance(v, dict):
        return (dict, frozenset((_canon(k), _canon(x)) for k, x in v.items()))
    if t is Opaque:
        return (Opaque, object())
    return (t, v)


def judge_case(case: HiddenCase, obs: Observation) -> CaseResult:
    """Turn what the sandbox observed for one case into its outcome.

    The detail never contains the expected value, the arguments or any text
    the candidate controls (exception messages, its own class names).

    Args:
        case: The hidden case, with ``error`` as a canonical dotted name.
        obs: What the sandbox saw.

    Returns:
        ``ok``, ``wrong`` or ``error`` for a call that ended; ``timeout``,
        ``crash``, ``resource`` or ``not_run`` as observed.

    Example:
        >>> from sandbox.types import make_case
        >>> judge_case(make_case("f", expect=1), Observation("returned", value=True))
        CaseResult(outcome='wrong', detail='returned a value of a different type (bool)')
    """
    if obs.status == "returned":
        return _judge_returned(case, obs.value)
    if obs.status == "raised":
        return _judge_raised(case, obs.raised)
    if obs.status == "unserializable":
        if case.error is not None:
            return CaseResult("not_raised", "no exception raised")
        return CaseResult("wrong", "returned a value that is not plain data")
    if obs.status == "timeout":
        return CaseResult("timeout", "the case ran out of time")
    if obs.status == "crash":
        return CaseResult("crash", "the process died")
    if obs.status == "resource":
        return CaseResult("resource", f"stopped at a cap on the process tree ({obs.detail})")
    return CaseResult("not_run", "the case was not run")


def _judge_returned(case: HiddenCase, value: object) -> CaseResult:
    if case.kind == "stdio":
        return _judge_stdout(case, value)
    if case.kind == "program":
        return _judge_test(value)
    if case.error is not None:
        return CaseResult("not_raised", "no exception raised")
    if values_equal(case.expect, value, tol=case.tol, rel_tol=case.rel_tol):
        return CaseResult("ok")
    if case.compare == "python" and _python_equal(case.expect, value):
        return CaseResult("ok")
    if type(value) is Opaque:
        return CaseResult("wrong", "returned an object that is not plain data")
    if type(value) is not type(case.expect):
        return CaseResult("wrong", f"returned a value of a different type ({type(value).__name__})")
    return CaseResult("wrong", "returned a different value")


def _python_equal(expected: object, actual: object) -> bool:
    """The benchmark harness's own ``==``, on plain decoded data.

    No candidate code runs: an Opaque value equals nothing.
    """
    if _holds_opaque(actual):
        return False
    try:
        return bool(expected == actual)
    except RecursionError:
        return False


def _holds_opaque(v: object) -> bool:
    if type(v) is Opaque:
        return True
    if isinstance(v, dict):
        return any(_holds_opaque(k) or _holds_opaque(x) for k, x in v.items())
    if isinstance(v, list | tuple | set | frozenset):
        return any(_holds_opaque(x) for x in v)
    return False


#: A token that is a number: optional sign, digits with an optional fraction, exponent.
#: ASCII digits only: ``float()`` and ``int()`` also read other scripts' digits.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: An integer token: optional sign, then digits (leading zeros allowed).
_INTEGER = re.compile(r"([+-]?)0*([0-9]+)")
#: Tolerances of numeric stdout tokens when a case sets neither ``tol`` nor ``rel_tol``.
STDOUT_TOL: Final = 1e-9
STDOUT_REL_TOL: Final = 1e-9


def stdout_equal(
    expected: str,
    actual: str,
    *,
    compare: str | None = None,
    tol: float | None = None,
    rel_tol: float | None = None,
) -> bool:
    r"""Compare a program's stdout with the expected text.

    ``exact`` compares the texts as they are. ``tokens`` (the default) splits both
    on whitespace (so line endings, trailing blanks and blank lines do not
    count), then compares token by token:

    - two integer tokens (an optional sign, then ASCII digits) are equal only
      when they are the same integer, whatever their length, and whatever the
      tolerances: by value, so ``007``, ``+7`` and ``7`` are one integer, as are
      ``-0`` and ``0``;
    - when either token is a number written as a non-integer (a fraction or an
      exponent: ``7.0``, ``1e-3``), both are read as floats and compared within
      the tolerances (``tol`` absolute, ``rel_tol`` relative, ``1e-9`` each by
      default);
    - anything else compares as text.

    Example:
        >>> stdout_equal("0.3333333333\n", "0.333333333333"), stdout_equal("1 2", "1  2\n")
        (True, True)
        >>> stdout_equal("1000000007", "1000000008"), stdout_equal("7", "+007")
        (False, True)
    """
    if compare == "exact":
        return expected == actual
    want, got = expected.split(), actual.split()
    if len(want) != len(got):
        return False
    if tol is None and rel_tol is None:
        tol, rel_tol = STDOUT_TOL, STDOUT_REL_TOL
    tols = (tol or 0.0, rel_tol or 0.0)
    return all(w == g or _tokens_equal(w, g, tols) for w, g in zip(want, got, strict=True))


def _tokens_equal(want: str, got: str, tol: tuple[float, float]) -> bool:
    int_want, int_got = _INTEGER.fullmatch(want), _INTEGER.fullmatch(got)
    if int_want and int_got:
        return _integer_key(int_want) == _integer_key(int_got)
    if not (_NUMBER.fullmatch(want) and _NUMBER.fullmatch(got)):
        return False
    try:
        a, b = float(want), float(got)
    except (ValueError, OverflowError):
        return False
    return math.isfinite(a) and math.isfinite(b) and _close(a, b, tol)


def _integer_key(match: re.Match[str]) -> tuple[bool, str]:
    """An integer token's value as (negative, digits without leading zeros).

    Read from the text, never through ``int()``: no digit limit, linear time.
    """
    sign, digits = match.group(1), match.group(2)
    return (sign == "-" and digits != "0", digits)


def _judge_stdout(case: HiddenCase, value: object) -> CaseResult:
    if type(value) is not str or type(case.expect) is not str:
        return CaseResult("wrong", "the program's output is not text")
    if stdout_equal(case.expect, value, compare=case.compare, tol=case.tol, rel_tol=case.rel_tol):
        return CaseResult("ok")
    return CaseResult("wrong", "printed a different output")


def _judge_test(value: object) -> CaseResult:
    if value is True:
        return CaseResult("ok")
    # Loaded here: the test-program runner loads unittest, which no other case needs.
    from sandbox.child.programs import TAMPERED  # noqa: PLC0415

    if type(value) is str and value.startswith(TAMPERED):
        return CaseResult("wrong", "test program: " + value[len(TAMPERED) :][:200])
    return CaseResult("crash", "malformed test result")


def _judge_raised(case: HiddenCase, raised: RaisedInfo | None) -> CaseResult:
    if raised is None:
        return CaseResult("error", "raised an exception of unknown type")
    if case.kind == "program" and "builtins.AssertionError" in raised.mro:
        return CaseResult("wrong", "the test failed")
    if case.kind == "stdio":
        return CaseResult("error", f"the program raised {_describe(raised)}")
    if case.error is not None and case.error in raised.mro:
        return CaseResult("ok")
    return CaseResult("error", f"raised {_describe(raised)}")


def _describe(raised: RaisedInfo) -> str:
    # type_name is the candidate's to choose (it can define any class name), so
    # only genuine builtin/stdlib names from the MRO are shown.
    if not raised.mro:
        return "an exception of a non-standard class"
    if raised.type_name == raised.mro[0]:
        return raised.mro[0]
    return f"a subclass of {raised.mro[0]}"
