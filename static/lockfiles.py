r"""Read a lockfile into the distributions it pins: ``{normalized_name: version}``.

The format is chosen by file name (:func:`lockfile_format`):

- ``*.txt`` (``requirements.txt``, ``requirements-dev.txt``, ``constraints.txt``):
  pip's requirements format. Comments, ``\`` continuation lines, environment
  markers, per-requirement options (``--hash=...``), global options
  (``--index-url``, ``--require-hashes``, ...), ``-r``/``-c`` includes relative
  to the including file, editable and URL requirements. A name comes from the
  PEP 508 requirement, a ``#egg=`` fragment, or a wheel or sdist file name; an
  editable local path with none of these names nothing and is skipped.
- ``uv.lock`` and ``poetry.lock``: TOML, ``[[package]]`` tables with ``name`` and
  ``version`` (uv omits ``version`` for a dynamic or virtual project).
- ``pylock.toml`` and ``pylock.<name>.toml`` (PEP 751): TOML, ``lock-version``
  ``1.x``, ``[[packages]]`` tables with ``name`` and optional ``version``.

The value is the locked version. A requirements line without an exact pin
(``requests>=2``, ``pkg @ https://...``) still declares the distribution; its
value is the specifier or URL as written (``">=2"``, ``"@ https://..."``), or
``""`` when there is none, unless a ``-c`` constraints file pins it exactly. A
constraints file only fixes versions: a name that appears only there is not a
declared distribution. A distribution locked at several versions (per-platform
forks) maps to them joined by ``" || "`` in file order. Environment markers are
parsed but not evaluated: a distribution pinned for any environment counts.

A file that cannot be read or parsed raises :class:`LockfileError`, whose
message names the file and the line (``requirements.txt:7: ...``), and the
column for TOML syntax errors (``uv.lock:3:9: ...``).

This module uses only the standard library and ``packaging``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidName,
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

__all__ = ["LockfileError", "LockfileFormat", "lockfile_format", "read_lockfile"]

LockfileFormat = Literal["requirements", "uv", "poetry", "pylock"]
"""The lockfile formats understood here."""


class LockfileError(ValueError):
    """A lockfile that cannot be read or parsed: bad input, not a tool failure.

    Raised by :func:`read_lockfile`; the CLI reports it as a usage error (exit 2).
    """


_PYLOCK_NAME = re.compile(r"^pylock\.([^.]+\.)?toml$")
_COMMENT = re.compile(r"(^|\s+)#.*$")
_TOML_WHERE = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$")
_EGG = re.compile(r"#(?:.*&)?egg=([A-Za-z0-9][A-Za-z0-9._-]*)")
# Global options take one value (or none) and say nothing about which distributions exist.
_GLOBAL_WITH_VALUE = frozenset(
    {
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "--no-binary",
        "--only-binary",
        "--trusted-host",
        "--use-feature",
    }
)
_GLOBAL_FLAGS = frozenset({"--no-index", "--pre", "--prefer-binary", "--require-hashes"})
_INCLUDES = {"-r": "r", "--requirement": "r", "-c": "c", "--constraint": "c"}
_EDITABLE = frozenset({"-e", "--editable"})
_PER_REQUIREMENT = re.compile(r"\s--(?:hash|config-settings|global-option|install-option)\b.*$")


def lockfile_format(path: str | Path) -> LockfileFormat:
    """Tell a lockfile's format from its file name.

    Args:
        path: The lockfile's path; only its name is looked at.

    Returns:
        ``"requirements"``, ``"uv"``, ``"poetry"`` or ``"pylock"``.

    Raises:
        LockfileError: The name matches none of the known formats.
    """
    name = Path(path).name
    if name == "uv.lock":
        return "uv"
    if name == "poetry.lock":
        return "poetry"
    if _PYLOCK_NAME.match(name):
        return "pylock"
    if name.endswith(".txt"):
        return "requirements"
    raise LockfileError(
        f"{path}: unknown lockfile format; expected requirements.txt (any *.txt), "
        "uv.lock, poetry.lock, pylock.toml or pylock.<name>.toml"
    )


def read_lockfile(path: str | Path) -> dict[str, str]:
    """Read the distributions a lockfile pins.

    Args:
        path: A requirements file, ``uv.lock``, ``poetry.lock`` or ``pylock.toml``.

    Returns:
        ``{canonical distribution name: version}``, in file order (see the module
        docstring for unpinned requirements and multi-version locks).

    Raises:
        LockfileError: The file cannot be read, its name is not a known format, or
            it does not parse; the message names the file and line.
    """
    kind = lockfile_format(path)
    if kind == "requirements":
        return _read_requirements(Path(path))
    return _read_toml_lock(Path(path), kind)


# --- requirements.txt -------------------------------------------------------------------------


def _read_requirements(path: Path) -> dict[str, str]:
    declared: dict[str, list[str]] = {}
    constraints: dict[str, list[str]] = {}
    _parse_requirements_file(path, declared, constraints, chain=())
    pins: dict[str, str] = {}
    for name, versions in declared.items():
        exact = [v for v in versions if _is_version(v)]
        if not exact and name in constraints:
            exact = [v for v in constraints[name] if _is_version(v)]
        pins[name] = _join(exact or versions)
    return pins


def _parse_requirements_file(
    path: Path,
    declared: dict[str, list[str]],
    constraints: dict[str, list[str]],
    chain: tuple[Path, ...],
) -> None:
    text = _read_text(path)
    for line_no, line in _logical_lines(text):
        where = f"{path}:{line_no}"
        if line.startswith("-") and not _is_editable(line):
            _option_line(path, where, line, (declared, constraints), chain)
            continue
        found = _requirement(where, line)
        if found is not None:
            declared.setdefault(found[0], []).append(found[1])


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LockfileError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise LockfileError(f"{path}:{line}: not UTF-8 text") from exc


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join backslash continuations and drop comments, as pip does; keep the first line number."""
    lines: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    # A final empty line flushes a continuation left open at the end of the file.
    for number, raw in enumerate([*text.splitlines(), ""], start=1):
        is_comment = raw.lstrip().startswith("#")
        if not pending:
            start = number
        if raw.endswith("\\") and not is_comment:
            pending.append(raw[:-1])
            continue
        pending.append("" if is_comment else raw)
        joined = _COMMENT.sub("", " ".join(pending)).strip()
        pending = []
        if joined:
            lines.append((start, joined))
    return lines


def _is_editable(line: str) -> bool:
    return line.startswith("-") and _split_option(line)[0] in _EDITABLE


def _option_line(
    path: Path,
    where: str,
    line: str,
    tables: tuple[dict[str, list[str]], dict[str, list[str]]],
    chain: tuple[Path, ...],
) -> None:
    option, value = _split_option(line)
    if option in _GLOBAL_FLAGS or option in _GLOBAL_WITH_VALUE:
        return
    if option not in _INCLUDES:
        raise LockfileError(f"{where}: unknown option {option!r}")
    if not value:
        raise LockfileError(f"{where}: {option} needs a file name")
    if "://" in value:
        raise LockfileError(f"{where}: remote include {value!r} is not read; vendor the file")
    target = path.parent / value
    if target.resolve() in chain or target.resolve() == path.resolve():
        raise LockfileError(f"{where}: including {value} again makes a cycle")
    if not target.is_file():
        raise LockfileError(f"{where}: included file {target} not found")
    declared, constraints = tables
    if _INCLUDES[option] == "r":
        _parse_requirements_file(target, declared, constraints, (*chain, path.resolve()))
    else:
        _parse_requirements_file(target, constraints, constraints, (*chain, path.resolve()))


def _split_option(line: str) -> tuple[str, str]:
    if line.startswith("--"):
        first = line.split(maxsplit=1)[0]
        head, _, rest = line.partition("=") if "=" in first else line.partition(" ")
        return head.strip(), rest.strip()
    # Short options take their value attached (-rfile.txt) or after a space.
    return line[:2], line[2:].strip()


def _requirement(where: str, line: str) -> tuple[str, str] | None:
    editable = _is_editable(line)
    text = _split_option(line)[1] if editable else line
    text = _PER_REQUIREMENT.sub("", f" {text}").strip()
    if editable or _looks_like_path_or_url(text):
        return _name_from_location(text)
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0]
        raise LockfileError(f"{where}: invalid requirement {text!r}: {reason}") from exc
    name = canonicalize_name(req.name)
    if req.url:
        return name, f"@ {req.url}"
    pins = [
        s.version for s in req.specifier if s.operator in {"==", "==="} and "*" not in s.version
    ]
    return name, pins[0] if len(pins) == 1 else str(req.specifier)


def _looks_like_path_or_url(text: str) -> bool:
    head = text.split(";", 1)[0].strip()
    return (
        "://" in head.split("@", 1)[0]
        or head.startswith((".", "/", "~"))
        or head.endswith((".whl", ".tar.gz", ".zip"))
    )


def _name_from_location(text: str) -> tuple[str, str] | None:
    location = text.split(" ;", 1)[0].strip()
    egg = _EGG.search(location)
    if egg:
        return canonicalize_name(egg.group(1)), f"@ {location}"
    filename = location.rsplit("/", 1)[-1].split("#", 1)[0]
    try:
        if filename.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(filename)
            return name, str(version)
        if filename.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(filename)
            return name, str(version)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    # An editable local project or a bare VCS URL names no distribution.
    return None


# --- TOML lockfiles -----------------------------------------------------------------------------


def _read_toml_lock(path: Path, kind: LockfileFormat) -> dict[str, str]:
    text = _read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LockfileError(f"{path}:{_toml_location(str(exc), text)}") from exc
    key = "packages" if kind == "pylock" else "package"
    if kind == "pylock":
        _check_lock_version(path, text, data)
    tables = data.get(key, [])
    if not isinstance(tables, list):
        raise LockfileError(
            f"{path}:{_header_line(text, key, 0)}: `{key}` must be an array of tables"
        )
    found: dict[str, list[str]] = {}
    for index, table in enumerate(tables):
        name, version = _package_entry(path, text, key, index, table, kind)
        found.setdefault(name, []).append(version)
    return {name: _join(versions) for name, versions in found.items()}


def _toml_location(message: str, text: str) -> str:
    match = _TOML_WHERE.search(message)
    if match is None:
        return f"1: {message}"
    what = message[: match.start()]
    if match.group(1) is None:
        return f"{text.count(chr(10)) + 1}: {what} at end of file"
    return f"{match.group(1)}:{match.group(2)}: {what}"


def _check_lock_version(path: Path, text: str, data: dict[str, Any]) -> None:
    version = data.get("lock-version")
    line = _key_line(text, "lock-version")
    if not isinstance(version, str):
        raise LockfileError(f"{path}:{line}: missing or non-string `lock-version` (PEP 751)")
    if version.split(".", 1)[0] != "1":
        raise LockfileError(f"{path}:{line}: unsupported lock-version {version!r}; expected 1.x")


def _package_entry(
    path: Path, text: str, key: str, index: int, table: object, kind: LockfileFormat
) -> tuple[str, str]:
    where = f"{path}:{_header_line(text, key, index)}"
    if not isinstance(table, dict):
        raise LockfileError(f"{where}: `{key}` entry {index + 1} is not a table")
    name = table.get("name")
    if not isinstance(name, str):
        raise LockfileError(f"{where}: `{key}` entry {index + 1} has no string `name`")
    try:
        canonical = canonicalize_name(name, validate=True)
    except InvalidName as exc:
        raise LockfileError(f"{where}: invalid distribution name {name!r}") from exc
    version = table.get("version", None if kind == "poetry" else "")
    if not isinstance(version, str):
        raise LockfileError(f"{where}: package {name!r} has no string `version`")
    return canonical, version


def _header_line(text: str, key: str, index: int) -> int:
    """Line of the ``index``-th ``[[key]]`` header; 1 when the array is written inline."""
    header = re.compile(rf"^[ \t]*\[\[[ \t]*{re.escape(key)}[ \t]*\]\]", re.MULTILINE)
    for count, match in enumerate(header.finditer(text)):
        if count == index:
            return text.count("\n", 0, match.start()) + 1
    return 1


def _key_line(text: str, key: str) -> int:
    match = re.search(rf"^[ \t]*{re.escape(key)}[ \t]*=", text, re.MULTILINE)
    return 1 if match is None else text.count("\n", 0, match.start()) + 1


def _is_version(value: str) -> bool:
    return bool(value) and value[0].isalnum()


def _join(versions: list[str]) -> str:
    return " || ".join(dict.fromkeys(versions))
