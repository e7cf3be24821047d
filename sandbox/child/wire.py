"""Tagged JSON values: the only form in which data crosses the sandbox wall.

This module is imported twice: by the grader (``sandbox.child.wire``) and, as
plain ``wire``, by the harness inside the sandbox. It therefore uses the
standard library only and keeps no state.

JSON has no tuples, sets, bytes, non-finite floats or non-string keys, so
those travel as one-key objects whose key starts with ``$``:

========================  ==========================================
``{"$tuple": [...]}``     tuple
``{"$set": [...]}``       set
``{"$frozenset": [...]}`` frozenset
``{"$bytes": "<b64>"}``   bytes
``{"$float": "nan"}``     ``nan``, ``inf`` or ``-inf``
``{"$dict": [[k, v]]}``   dict whose keys are not all plain strings
``{"$int": "0x..."}``     an int too large for a JSON number reader
``{"$opaque": "m.Q"}``    (results only) an object of a non-plain type
========================  ==========================================

Any object with a key starting with ``$`` must be exactly one known tag.
Types are checked exactly (``type(x) is int``), so a subclass of ``int`` or
``str`` is never encoded as one: it becomes ``$opaque`` and can never equal
an expected value. Encoding a candidate's result calls none of its code.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

__all__ = ["Opaque", "WireError", "from_wire", "to_wire"]

#: Ints beyond this magnitude travel as hex strings (hex conversion is exempt
#: from the interpreter's int-to-str digit limit).
_BIG_INT = 2**63
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_TAGS = ("$tuple", "$set", "$frozenset", "$bytes", "$float", "$dict", "$int", "$opaque")


class WireError(ValueError):
    """A value cannot be encoded, or a wire object is malformed.

    Raised by :func:`to_wire` (cycles, depth, size, unencodable strings) and
    :func:`from_wire` (unknown tag, wrong shape); the message names the place
    as a path such as ``$[2].key``.
    """


class Opaque:
    """A result of a type that is not plain data; it equals no expected value.

    Frozen, with slots, equal by its field: what ``@dataclass(frozen=True,
    slots=True)`` would make, written out because :mod:`dataclasses` pulls
    ``inspect``, ``ast``, ``dis`` and ``tokenize`` into the sandbox's zygote:
    1.4 MB of its heap that every candidate's process maps, copies the page
    tables of at fork and tears down at exit.
    """

    __slots__ = ("type_name",)
    __match_args__ = ("type_name",)

    type_name: str
    """Dotted name of the object's type, as the candidate's process saw it."""

    def __init__(self, type_name: str) -> None:
        """Hold ``type_name``."""
        object.__setattr__(self, "type_name", type_name)

    def __setattr__(self, name: str, value: object) -> None:
        """Refuse: the value is frozen."""
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        """Refuse: the value is frozen."""
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        """Equal to another :class:`Opaque` of the same type name."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.type_name == other.type_name

    def __hash__(self) -> int:
        """Hash of the type name, as equality."""
        return hash((self.type_name,))

    def __reduce__(self) -> tuple[type[Opaque], tuple[str]]:
        """Pickled and copied through :meth:`__init__` (slots would be set one by one)."""
        return (Opaque, (self.type_name,))

    def __repr__(self) -> str:
        """``Opaque(type_name='...')``."""
        return f"Opaque(type_name={self.type_name!r})"


def to_wire(value: Any, *, max_depth: int = 100, max_nodes: int = 1_000_000) -> Any:
    """Encode a plain Python value as tagged JSON data.

    Args:
        value: The value to encode.
        max_depth: Deepest nesting accepted.
        max_nodes: Most values (containers and leaves) accepted in total.

    Returns:
        Data that ``json.dumps`` accepts and :func:`from_wire` reverses.

    Raises:
        WireError: For a cycle, too deep or too large a value, or a string
            that is not valid Unicode (lone surrogates).
    """
    budget = [max_nodes]
    return _enc(value, "$", 0, max_depth, budget, set())


def _enc(v: Any, path: str, depth: int, max_depth: int, budget: list[int], stack: set[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise WireError(f"{path}: value too large")
    if depth > max_depth:
        raise WireError(f"{path}: nested deeper than {max_depth}")
    t = type(v)
    if v is None or t is bool:
        return v
    if t is int:
        return v if -_BIG_INT < v < _BIG_INT else {"$int": hex(v)}
    if t is float:
        if math.isfinite(v):
            return v
        return {"$float": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    if t is str:
        try:
            v.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise WireError(f"{path}: string is not valid Unicode") from exc
        return v
    if t is bytes:
        return {"$bytes": base64.b64encode(v).decode("ascii")}
    if t not in (list, tuple, set, frozenset, dict):
        return {"$opaque": f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', '?')}"}
    if id(v) in stack:
        raise WireError(f"{path}: value contains itself")
    stack.add(id(v))
    try:
        return _enc_container(v, t, path, depth, max_depth, budget, stack)
    finally:
        stack.discard(id(v))


def _enc_container(
    v: Any, t: type, path: str, depth: int, max_depth: int, budget: list[int], stack: set[int]
) -> Any:
    d = depth + 1
    if t is dict:
        plain = all(type(k) is str and not k.startswith("$") for k in v)
        if plain:
            return {
                _enc(k, f"{path}<key>", d, max_depth, budget, stack): _enc(
                    x, f"{path}.{k}", d, max_depth, budget, stack
                )
                for k, x in v.items()
            }
        pairs = [
            [
                _enc(k, f"{path}<key>", d, max_depth, budget, stack),
                _enc(x, f"{path}[{k!r}]", d, max_depth, budget, stack),
            ]
            for k, x in v.items()
        ]
        return {"$dict": pairs}
    items = [_enc(x, f"{path}[{i}]", d, max_depth, budget, stack) for i, x in enumerate(v)]
    if t is list:
        return items
    return {"$" + t.__name__: items}


def from_wire(obj: Any, *, allow_opaque: bool = True) -> Any:
    """Decode tagged JSON data (as parsed by ``json.loads``) into Python values.

    Args:
        obj: Parsed JSON.
        allow_opaque: Accept ``$opaque`` (true for results, false for cases).

    Returns:
        The Python value.

    Raises:
        WireError: For an unknown tag, a tag with extra keys, or a wrong shape.
    """
    return _dec(obj, "$", allow_opaque)


def _dec(o: Any, path: str, allow_opaque: bool) -> Any:
    t = type(o)
    if t is str:
        try:
            o.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise WireError(f"{path}: string is not valid Unicode") from exc
        return o
    if o is None or t in (bool, int, float):
        return o
    if t is list:
        return [_dec(x, f"{path}[{i}]", allow_opaque) for i, x in enumerate(o)]
    if t is not dict:
        raise WireError(f"{path}: not JSON data ({t.__name__})")
    tags = [k for k in o if k.startswith("$")]
    if not tags:
        return {k: _dec(x, f"{path}.{k}", allow_opaque) for k, x in o.items()}
    if len(o) != 1 or tags[0] not in _TAGS or (tags[0] == "$opaque" and not allow_opaque):
        known = ", ".join(t for t in _TAGS if allow_opaque or t != "$opaque")
        raise WireError(f"{path}: unknown tag object {sorted(o)!r} (known tags: {known})")
    return _dec_tag(tags[0], o[tags[0]], path, allow_opaque)


def _dec_tag(tag: str, body: Any, path: str, allow_opaque: bool) -> Any:  # noqa: C901, PLR0912
    where = f"{path}.{tag}"
    if tag in ("$tuple", "$set", "$frozenset", "$dict"):
        if type(body) is not list:
            raise WireError(f"{where}: expected a list")
        items = [_dec(x, f"{where}[{i}]", allow_opaque) for i, x in enumerate(body)]
        try:
            if tag == "$tuple":
                return tuple(items)
            if tag == "$set":
                return set(items)
            if tag == "$frozenset":
                return frozenset(items)
            if not all(type(p) is list and len(p) == 2 for p in items):
                raise WireError(f"{where}: expected a list of [key, value] pairs")
            return {k: v for k, v in items}
        except TypeError as exc:
            raise WireError(f"{where}: unhashable element ({exc})") from exc
    if type(body) is not str:
        raise WireError(f"{where}: expected a string")
    if tag == "$bytes":
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise WireError(f"{where}: not valid base64") from exc
    if tag == "$float":
        if body not in _FLOATS:
            raise WireError(f"{where}: expected one of nan, inf, -inf")
        return _FLOATS[body]
    if tag == "$int":
        try:
            return int(body, 16)
        except ValueError as exc:
            raise WireError(f"{where}: not a hex integer") from exc
    return Opaque(body)
