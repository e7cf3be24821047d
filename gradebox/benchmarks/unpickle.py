"""A restricted unpickler for LiveCodeBench's compressed test cases.

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
"""

from __future__ import annotations

import base64
import binascii
import io
import pickle
import zlib

__all__ = ["MAX_DECOMPRESSED", "UnsafePickle", "decode_compressed", "restricted_loads"]

MAX_DECOMPRESSED = 512 * 1024 * 1024
"""Largest decompressed pickle accepted (a zlib bomb stops here)."""


class UnsafePickle(ValueError):
    """The field is not a pickle of plain data (or not base64/zlib at all)."""


class _Plain(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> type:
        raise UnsafePickle(f"the pickle names {module}.{name}: only plain data is accepted")

    def persistent_load(self, pid: object) -> object:
        raise UnsafePickle("the pickle uses persistent ids: only plain data is accepted")


def restricted_loads(data: bytes) -> object:
    """Unpickle ``data`` if it builds only plain containers, strings and numbers.

    Raises:
        UnsafePickle: It names a class or function, or is not a valid pickle.
    """
    try:
        return _Plain(io.BytesIO(data)).load()
    except UnsafePickle:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as exc:
        raise UnsafePickle(f"not a valid pickle ({type(exc).__name__}: {str(exc)[:100]})") from exc
    except (MemoryError, RecursionError) as exc:
        raise UnsafePickle("the pickle is too large or too deep") from exc


def decode_compressed(text: str) -> object:
    """``base64 -> zlib -> restricted unpickle``, as LiveCodeBench writes private cases.

    Raises:
        UnsafePickle: Any step fails, or the pickle is not plain data.
    """
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=False)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise UnsafePickle(f"not base64 ({exc})") from exc
    inflate = zlib.decompressobj()
    try:
        data = inflate.decompress(raw, MAX_DECOMPRESSED)
    except zlib.error as exc:
        raise UnsafePickle(f"not zlib data ({exc})") from exc
    if inflate.unconsumed_tail:
        raise UnsafePickle(f"decompresses to more than {MAX_DECOMPRESSED} bytes")
    return restricted_loads(data)
