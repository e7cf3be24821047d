"""A restricted, bounded unpickler for LiveCodeBench's compressed test cases.

LiveCodeBench stores ``private_test_cases`` as ``base64(zlib(pickle(json_text)))``
(``lcb_runner/benchmarks/code_generation.py``, ``CodeGenerationProblem.__post_init__``).
``pickle.loads`` on such a field would run whatever the pickle names (any
importable callable, with any arguments): a benchmark file is not trusted
that far. Here a pickle may hold only what its opcodes build without naming
a class: strings, bytes, numbers, ``None``, booleans, lists, tuples, dicts,
sets (sets and bytes only at protocol 4 and later: earlier protocols build them
by calling a class). Anything that needs ``find_class`` (``GLOBAL``, ``STACK_GLOBAL``, and with
it ``REDUCE``, ``BUILD``, ``NEWOBJ``, ``INST``, ``OBJ``) or a persistent id is
refused before it is built.

It is bounded too (:mod:`gradebox.benchmarks.bounds`): every step builds at most
``limit`` bytes. The base64 text and the zlib output are cut there; the pickle
is run by the pure-Python unpickler with every opcode counted
(:data:`~gradebox.benchmarks.bounds.OBJECT_COST` each, so what the load holds
in memory stays under the bound), and what it built is then measured as it
would be used, every memo reference expanded: a list of 1,000 references to a
1 MB string is 1 GB, ten nested lists of ten references each are 10**10
values, a list that contains itself is without end. Past the bound it raises
:class:`~gradebox.benchmarks.bounds.TooLarge` (the row is skipped).
"""

from __future__ import annotations

import base64
import binascii
import io
import pickle
import struct
import zlib
from collections.abc import Callable
from typing import Any, ClassVar

from gradebox.benchmarks.bounds import OBJECT_COST, Bounds, TooLarge

__all__ = ["MAX_DECOMPRESSED", "UnsafePickle", "decode_compressed", "restricted_loads"]

MAX_DECOMPRESSED = Bounds().row_bytes
"""The default bound of every step (a zlib bomb stops here): ``--max-row-bytes``."""


class UnsafePickle(ValueError):
    """The field is not a pickle of plain data (or not base64/zlib at all)."""


_Op = Callable[[Any], None]


def _counted(op: _Op) -> _Op:
    def run(self: _Plain) -> None:
        self.ops += 1
        if self.ops * OBJECT_COST + self.size > self.limit:
            raise TooLarge(f"the pickle expands to more than --max-row-bytes ({self.limit})")
        op(self)

    return run


class _Plain(pickle._Unpickler):
    """The pure-Python unpickler, every opcode counted, no class ever found."""

    dispatch: ClassVar[dict[int, _Op]] = {
        code: _counted(op) for code, op in pickle._Unpickler.dispatch.items()
    }

    def __init__(self, data: bytes, limit: int) -> None:
        super().__init__(io.BytesIO(data))
        self.ops = 0
        self.size = len(data)
        self.limit = limit

    def find_class(self, module: str, name: str) -> type:
        raise UnsafePickle(f"the pickle names {module}.{name}: only plain data is accepted")

    def persistent_load(self, pid: object) -> object:
        raise UnsafePickle("the pickle uses persistent ids: only plain data is accepted")


def _check_expanded(value: object, limit: int) -> None:
    """Raise :class:`TooLarge` when ``value``, every shared reference expanded, is over ``limit``.

    Counted as it is walked (each value before its children are), so the walk
    stops past the bound: a cycle or 10**10 leaves cost no more than ``limit``.
    """
    total = OBJECT_COST
    stack = [value]
    while stack:
        v = stack.pop()
        children: list[object] | None = None
        if isinstance(v, str | bytes | bytearray):
            total += len(v)
        elif isinstance(v, int):
            total += v.bit_length() // 8
        elif isinstance(v, dict):
            children = [*v.keys(), *v.values()]
        elif isinstance(v, list | tuple | set | frozenset):
            children = list(v)
        if children is not None:
            total += OBJECT_COST * len(children)
        if total > limit:
            raise TooLarge(f"the pickle expands to more than --max-row-bytes ({limit})")
        if children:
            stack += children


_MALFORMED = (
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    AttributeError,
    OverflowError,
    struct.error,
)
"""What the pure-Python unpickler raises on a malformed pickle."""


def restricted_loads(data: bytes, *, limit: int = MAX_DECOMPRESSED) -> object:
    """Unpickle ``data`` if it builds only plain containers, strings and numbers, within ``limit``.

    Raises:
        UnsafePickle: It names a class or function, or is not a valid pickle.
        TooLarge: What it builds (memo references expanded) is more than ``limit`` bytes.
    """
    try:
        value = _Plain(data, limit).load()
    except (UnsafePickle, TooLarge):
        raise
    except _MALFORMED as exc:
        raise UnsafePickle(f"not a valid pickle ({type(exc).__name__}: {str(exc)[:100]})") from exc
    except (MemoryError, RecursionError) as exc:
        raise UnsafePickle("the pickle is too large or too deep") from exc
    _check_expanded(value, limit)
    return value


def decode_compressed(text: str, *, limit: int = MAX_DECOMPRESSED) -> object:
    """``base64 -> zlib -> restricted unpickle``, as LiveCodeBench writes private cases.

    Args:
        text: The field.
        limit: The most bytes each step may build (``--max-row-bytes``).

    Raises:
        UnsafePickle: Any step fails, or the pickle is not plain data.
        TooLarge: A step would build more than ``limit`` bytes.
    """
    if len(text) > limit:
        raise TooLarge(f"{len(text)} bytes of base64, more than --max-row-bytes ({limit})")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=False)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise UnsafePickle(f"not base64 ({exc})") from exc
    inflate = zlib.decompressobj()
    try:
        data = inflate.decompress(raw, limit)
    except zlib.error as exc:
        raise UnsafePickle(f"not zlib data ({exc})") from exc
    if inflate.unconsumed_tail:
        raise TooLarge(f"decompresses to more than --max-row-bytes ({limit})")
    if not inflate.eof:
        raise UnsafePickle("not zlib data (the stream ends early)")
    return restricted_loads(data, limit=limit)
