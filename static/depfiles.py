"""What a repository's dependency files declare, line by line (the gate's view of ``deps``).

:func:`declarations` reads one file's text, by its name:

- requirements files (``requirements*.txt``, ``constraints*.txt``, any ``.txt`` under
  a ``requirements/`` folder): one PEP 508 requirement a line; options, includes,
  editables, URLs and comments are skipped (includes are files of their own);
- ``uv.lock``, ``poetry.lock``, ``pylock.toml`` / ``pylock.<name>.toml``: each
  ``[[package]]`` / ``[[packages]]`` table's ``name`` and ``version``, at the
  version's line;
- ``pyproject.toml``: ``[project]`` ``dependencies`` and ``optional-dependencies``,
  and ``[dependency-groups]`` (strings only), at the requirement's line.

Each is a :class:`Declared` with the exact version (``==`` / ``===`` / a lock's
version) or the specifier as written; :func:`static.deps.findings_for` checks it.
A file that does not parse declares nothing: the gate's other checks see it.

This module uses only the standard library and ``packaging``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidName, canonicalize_name

__all__ = ["Declared", "declarations", "is_dependency_file"]

_PYLOCK = re.compile(r"^pylock\.([^.]+\.)?toml$")
_COMMENT = re.compile(r"(^|\s)#.*$")


@dataclass(frozen=True, slots=True)
class Declared:
    """One dependency a file declares."""

    dist: str
    """The distribution's canonical name."""
    value: str
    """The exact version, else the specifier as written (``""``: none)."""
    line: int
    """1-based line of the declaration (a lock's ``version`` line)."""


def is_dependency_file(path: str) -> bool:
    """Whether :func:`declarations` reads this file (by its name)."""
    p = PurePosixPath(path)
    if p.name in ("uv.lock", "poetry.lock", "pyproject.toml") or _PYLOCK.match(p.name):
        return True
    if p.suffix != ".txt":
        return False
    return p.name.startswith(("requirements", "constraints")) or "requirements" in p.parts[:-1]


def declarations(path: str, text: str) -> list[Declared]:
    """The dependencies ``text`` (the file ``path``) declares; none when it does not parse."""
    name = PurePosixPath(path).name
    if name.endswith(".txt"):
        return _requirements(text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    if name == "pyproject.toml":
        return _pyproject(data, text)
    return _lock(data.get("packages" if name.startswith("pylock") else "package", []), text)


def _requirements(text: str) -> list[Declared]:
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _COMMENT.sub("", raw).strip().split(" --", 1)[0].strip()
        if not line or line.startswith("-") or line.endswith("\\"):
            continue
        found = _requirement(line, number)
        if found is not None:
            out.append(found)
    return out


def _requirement(text: str, line: int) -> Declared | None:
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    if req.url:
        return Declared(str(canonicalize_name(req.name)), f"@ {req.url}", line)
    exact = [
        s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version
    ]
    value = exact[0] if len(exact) == 1 else str(req.specifier)
    return Declared(str(canonicalize_name(req.name)), value, line)


def _pyproject(data: dict[str, Any], text: str) -> list[Declared]:
    project = data.get("project", {})
    lists: list[object] = []
    if isinstance(project, dict):
        lists.append(project.get("dependencies", []))
        optional = project.get("optional-dependencies", {})
        lists += list(optional.values()) if isinstance(optional, dict) else []
    groups = data.get("dependency-groups", {})
    lists += list(groups.values()) if isinstance(groups, dict) else []
    lines = text.splitlines()
    out = []
    for items in lists:
        for item in items if isinstance(items, list) else []:
            if isinstance(item, str):
                found = _requirement(item, _line_with(lines, item))
                out += [found] if found is not None else []
    return out


def _lock(tables: object, text: str) -> list[Declared]:
    lines = text.splitlines()
    out = []
    for table in tables if isinstance(tables, list) else []:
        if not isinstance(table, dict):
            continue
        name, version = table.get("name"), table.get("version")
        if not isinstance(name, str) or not isinstance(version, str):
            continue
        try:
            dist = str(canonicalize_name(name, validate=True))
        except InvalidName:
            continue
        out.append(Declared(dist, version, _version_line(lines, name, version)))
    return out


def _line_with(lines: list[str], item: str) -> int:
    quoted = (f'"{item}"', f"'{item}'")
    return next((k for k, line in enumerate(lines, start=1) if any(q in line for q in quoted)), 0)


def _version_line(lines: list[str], name: str, version: str) -> int:
    """The line of ``version = "..."`` in the table whose ``name`` is ``name``."""
    named = re.compile(rf"""^\s*name\s*=\s*["']{re.escape(name)}["']""")
    versioned = re.compile(rf"""^\s*version\s*=\s*["']{re.escape(version)}["']""")
    start = next((k for k, line in enumerate(lines) if named.match(line)), None)
    if start is None:
        return 0
    for k in range(start, len(lines)):
        if k > start and lines[k].lstrip().startswith("[["):
            break
        if versioned.match(lines[k]):
            return k + 1
    return start + 1
