"""Reading benchmark files: JSON Lines (optionally gzipped), JSON arrays, Parquet-free.

Every bad line is collected as ``file:line: what is wrong`` and raised together
as :class:`~gradebox.errors.BadInput`: an import never silently drops a task.
"""

from __future__ import annotations

import ast
import gzip
import io
import json
import keyword
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gradebox.benchmarks.bounds import DEFAULT_BOUNDS, Bounds, json_cost, row_bytes_message
from gradebox.benchmarks.records import Skipped
from gradebox.errors import BadInput

__all__ = ["Row", "field", "read_rows", "signature_of"]


@dataclass(frozen=True, slots=True)
class Row:
    """One record of a benchmark file."""

    line: int
    """1-based line (JSON Lines) or index + 1 (a JSON array)."""
    data: dict[str, Any]
    """The decoded object (its fields are read through :func:`field`)."""


_CHUNK = 1024 * 1024


class _Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def _read_at_most(stream: _Readable, limit: int) -> bytearray:
    """Up to ``limit + 1`` bytes of ``stream``, a chunk at a time.

    Never ``read(limit)``: that allocates ``limit`` bytes up front.
    """
    buffer = bytearray()
    while len(buffer) <= limit:
        chunk = stream.read(min(_CHUNK, limit + 1 - len(buffer)))
        if not chunk:
            break
        buffer += chunk
    return buffer


def _read(path: Path, limit: int) -> bytes | bytearray:
    """The file's bytes (gunzipped), at most ``limit`` of them."""
    raw: bytes | bytearray
    try:
        with path.open("rb") as f:
            st = os.fstat(f.fileno())
            if st.st_size > limit:
                raise BadInput(
                    [f"{path}: {st.st_size} bytes, more than --max-file-bytes ({limit})"]
                )
            raw = f.read() if stat.S_ISREG(st.st_mode) else _read_at_most(f, limit)
    except FileNotFoundError as exc:
        raise BadInput([f"{path}: no such file"]) from exc
    except OSError as exc:
        raise BadInput([f"{path}: cannot read ({exc.strerror or exc})"]) from exc
    if len(raw) > limit:  # a file that grew, or not a regular file
        raise BadInput([f"{path}: more than --max-file-bytes ({limit})"])
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as unzipped:
                raw = _read_at_most(unzipped, limit)
        except (OSError, EOFError, zlib.error) as exc:
            raise BadInput([f"{path}: not a valid gzip file ({exc})"]) from exc
        if len(raw) > limit:
            raise BadInput([f"{path}: decompresses to more than --max-file-bytes ({limit})"])
    return raw


def _text(path: Path, limit: int) -> str:
    raw = _read(path, limit)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput([f"{path}: not valid UTF-8 (byte {exc.start + 1})"]) from exc


def read_rows(
    path: Path, *, bounds: Bounds = DEFAULT_BOUNDS, skipped: list[Skipped] | None = None
) -> tuple[list[Row], list[str]]:
    """Every object of a JSON Lines file, or of a JSON array file; ``.gz`` is read too.

    Args:
        path: The file.
        bounds: The source may be ``file_bytes`` (decompressed) and decode to as
            much; a line may be ``row_bytes`` and decode to as much
            (:func:`~gradebox.benchmarks.bounds.json_cost`).
        skipped: Where a line over its bounds is listed (skipped, not decoded);
            without it, such a line is a problem.

    Returns:
        The records, and a ``file:line: what is wrong`` for each bad line (the
        reader adds its own and raises them together).

    Raises:
        BadInput: The file is missing, unreadable, over its bounds, or has no record at all.
    """
    text = _text(path, bounds.file_bytes)
    if text.lstrip().startswith("["):
        return _array(path, text, bounds), []
    rows, problems = [], []
    decoded = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        cost, why = _over(line, bounds, decoded)
        if why is not None:
            if skipped is None:
                problems.append(f"{path}:{number}: {why}")
            else:
                skipped.append(Skipped(f"line {number}", "row", why))
            continue
        decoded += cost
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{number}: invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        except (ValueError, RecursionError) as exc:
            problems.append(f"{path}:{number}: invalid JSON: {str(exc)[:200]}")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{path}:{number}: not a JSON object")
            continue
        rows.append(Row(number, obj))
    if not rows and not skipped:
        raise BadInput([*problems, f"{path}: no record"])
    return rows, problems


def _over(line: str, bounds: Bounds, decoded: int) -> tuple[int, str | None]:
    """What decoding ``line`` builds, and why it is not decoded (over a bound) or ``None``."""
    size = len(line) if line.isascii() or 4 * len(line) <= bounds.row_bytes else len(line.encode())
    if size > bounds.row_bytes:
        return size, row_bytes_message("the line", f"{size} bytes", bounds.row_bytes)
    cost = json_cost(line)
    if cost > bounds.row_bytes:
        why = row_bytes_message("the line", f"decodes to about {cost} bytes", bounds.row_bytes)
        return cost, why
    if decoded + cost > bounds.file_bytes:
        return cost, (
            f"the line decodes to about {cost} bytes, the lines before it to {decoded}: "
            f"more than --max-file-bytes ({bounds.file_bytes})"
        )
    return cost, None


def _array(path: Path, text: str, bounds: Bounds) -> list[Row]:
    cost = json_cost(text)
    if cost > bounds.file_bytes:
        why = f"decodes to about {cost} bytes, more than --max-file-bytes ({bounds.file_bytes})"
        raise BadInput([f"{path}: {why}"])
    try:
        items = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadInput([f"{path}: invalid JSON: {str(exc)[:200]}"]) from exc
    if not isinstance(items, list):
        raise BadInput([f"{path}: not a JSON array"])
    bad = [
        f"{path}: item {i + 1}: not a JSON object"
        for i, o in enumerate(items)
        if type(o) is not dict
    ]
    if bad:
        raise BadInput(bad)
    if not items:
        raise BadInput([f"{path}: no record"])
    return [Row(i + 1, o) for i, o in enumerate(items)]


def field(row: Row, name: str, kind: type, problems: list[str], path: Path) -> Any:
    """``row.data[name]`` when it has type ``kind``; else a problem naming file, line and field."""
    value = row.data.get(name)
    if type(value) is not kind or (kind is str and not value and name != "test_setup_code"):
        what = "missing" if name not in row.data else f"not a {kind.__name__}"
        problems.append(f"{path}:{row.line}: {name}: {what}")
        return None
    return value


def signature_of(code: str, fn: str) -> str:
    """The ``def`` line of ``fn`` in ``code`` (``""`` when it cannot be found)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return ""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == fn:
            node.body, node.decorator_list = [ast.Expr(ast.Constant(...))], []
            return ast.unparse(node).split("\n")[0].rstrip(":")
    return ""


def is_identifier(name: object) -> bool:
    """A Python identifier that is not a keyword."""
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)
