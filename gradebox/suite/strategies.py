"""A small declarative form of Hypothesis strategies, as JSON.

One strategy is an object with exactly one key (checked by
``schemas/properties.schema.json``; the semantics here):

=====================================================  ==============================
``{"int": {"min": -1000, "max": 1000}}``               ``integers(min, max)``
``{"float": {"min", "max", "allow_nan",                ``floats(...)``; nan and
"allow_infinity"}}``                                   infinities off by default
``{"bool": {}}`` / ``{"none": {}}``                    ``booleans()`` / ``none()``
``{"text": {"min_size", "max_size", "alphabet"}}``     ``text(...)`` (valid UTF-8)
``{"bytes": {"min_size", "max_size"}}``                ``binary(...)``
``{"list": {"of": S, "min_size", "max_size",           ``lists(...)``
"unique"}}``
``{"set": {"of": S, "min_size", "max_size"}}``         ``sets(...)``
``{"dict": {"keys": S, "values": S, ...}}``            ``dictionaries(...)``
``{"tuple": [S, ...]}``                                ``tuples(...)``
``{"one_of": [S, ...]}``                               ``one_of(...)``
``{"just": V}`` / ``{"sampled_from": [V, ...]}``       constants, as tagged JSON values
=====================================================  ==============================

Collections default to ``max_size`` 20 and text to 20 characters, so a
generated suite stays small enough to review.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from sandbox.child.wire import WireError, from_wire

__all__ = ["DEFAULT_MAX_SIZE", "build_strategy"]

DEFAULT_MAX_SIZE = 20
"""``max_size`` of collections and text when the spec leaves it out."""


def build_strategy(spec: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Turn one schema-valid strategy spec into a Hypothesis strategy.

    Args:
        spec: An object with exactly one key (see the module docstring).

    Returns:
        The strategy.

    Raises:
        ValueError: The options contradict each other (``min > max``), or a
            constant is not a valid tagged value; the message names the place.
    """
    ((kind, options),) = spec.items()
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise ValueError(f"unknown strategy {kind!r}")
    return builder(options)


def _int(o: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo, hi = o.get("min"), o.get("max")
    _ordered(lo, hi, "int")
    return st.integers(min_value=lo, max_value=hi)


def _float(o: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo, hi = o.get("min"), o.get("max")
    _ordered(lo, hi, "float")
    return st.floats(
        min_value=lo,
        max_value=hi,
        allow_nan=o.get("allow_nan", False),
        allow_infinity=o.get("allow_infinity", False),
    )


def _text(o: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo, hi = _sizes(o, "text")
    alphabet = o.get("alphabet")
    chars = st.sampled_from(sorted(set(alphabet))) if alphabet else st.characters(codec="utf-8")
    return st.text(chars, min_size=lo, max_size=hi)


def _bytes(o: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo, hi = _sizes(o, "bytes")
    return st.binary(min_size=lo, max_size=hi)


def _list(o: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo, hi = _sizes(o, "list")
    return st.lists(
        build_strategy(o["of"]), min_size=lo, max_size=hi, unique=o.get("unique", False)
    )


def _set(o: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo, hi = _sizes(o, "set")
    _require_hashable(o["of"], "set elements")
    return st.sets(build_strategy(o["of"]), min_size=lo, max_size=hi)


def _dict(o: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo, hi = _sizes(o, "dict")
    _require_hashable(o["keys"], "dict keys")
    return st.dictionaries(
        build_strategy(o["keys"]), build_strategy(o["values"]), min_size=lo, max_size=hi
    )


def _tuple(o: list[dict[str, Any]]) -> st.SearchStrategy[Any]:
    return st.tuples(*[build_strategy(s) for s in o])


def _one_of(o: list[dict[str, Any]]) -> st.SearchStrategy[Any]:
    return st.one_of([build_strategy(s) for s in o])


def _just(o: Any) -> st.SearchStrategy[Any]:
    return st.just(_constant(o, "just"))


def _sampled_from(o: list[Any]) -> st.SearchStrategy[Any]:
    return st.sampled_from([_constant(v, f"sampled_from[{i}]") for i, v in enumerate(o)])


def _none(_o: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.none()


def _bool(_o: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.booleans()


_BUILDERS: dict[str, Callable[[Any], st.SearchStrategy[Any]]] = {
    "int": _int,
    "float": _float,
    "bool": _bool,
    "none": _none,
    "text": _text,
    "bytes": _bytes,
    "list": _list,
    "set": _set,
    "dict": _dict,
    "tuple": _tuple,
    "one_of": _one_of,
    "just": _just,
    "sampled_from": _sampled_from,
}


def _constant(raw: Any, where: str) -> Any:
    try:
        return from_wire(raw, allow_opaque=False)
    except WireError as exc:
        raise ValueError(f"{where}: {exc}") from exc


def _ordered(lo: float | None, hi: float | None, kind: str) -> None:
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"{kind}: min ({lo}) is greater than max ({hi})")


def _sizes(o: dict[str, Any], kind: str) -> tuple[int, int]:
    lo = int(o.get("min_size", 0))
    hi = int(o.get("max_size", max(DEFAULT_MAX_SIZE, lo)))
    if lo > hi:
        raise ValueError(f"{kind}: min_size ({lo}) is greater than max_size ({hi})")
    return lo, hi


def _require_hashable(spec: dict[str, Any], what: str) -> None:
    if not _hashable(spec):
        raise ValueError(
            f"{what} must be hashable: use int, float, bool, none, text, bytes or tuple"
        )


def _hashable(spec: dict[str, Any]) -> bool:
    ((kind, options),) = spec.items()
    if kind in ("int", "float", "bool", "none", "text", "bytes"):
        return True
    if kind in ("tuple", "one_of"):
        return all(_hashable(s) for s in options)
    if kind in ("just", "sampled_from"):
        values = [options] if kind == "just" else options
        try:
            for value in values:
                hash(_constant(value, kind))
        except TypeError:
            return False
        return True
    return False
