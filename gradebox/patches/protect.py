"""Protected paths: the parts of a repository a patch may not touch (the tests and their setup).

A patch that edits the tests can make any suite pass (a lone ``conftest.py``
whose hook marks every report passed was scored resolved on SWE-bench
Verified). By default (:data:`DEFAULT_PROTECT`) these are protected: anything
under a ``tests``/``test`` directory, test modules (``test_*.py``,
``*_test.py``), every ``conftest.py``, pytest's ini files (``pytest.ini``,
``.pytest.ini``, ``pytest.toml``), ``tox.ini``, ``setup.cfg``, ``.github/**``,
interpreter start-up hooks (``sitecustomize.py``, ``usercustomize.py``,
``*.pth``: they run before pytest does, on the ``PYTHONPATH`` the tests get),
and the pytest section of ``pyproject.toml`` (``[tool.pytest...]``; a hunk
elsewhere in that file is allowed).

:func:`readonly_paths` lists what of a tree the same patterns cover, so the
sandbox can mount it read-only: code running in the tests cannot rewrite them.

Patterns are globs over POSIX paths relative to the repository: ``*`` and
``?`` stay inside one path component, ``**`` spans any number of them
(``**/conftest.py`` matches ``conftest.py`` too). The matcher is a dozen lines
written here: the standard library's ``fnmatch`` lets ``*`` cross ``/`` and
``PurePath.match`` has no ``**`` before Python 3.13.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from gradebox.patches.diff import FileChange, ParsedPatch

__all__ = [
    "DEFAULT_PROTECT",
    "PYPROJECT_PYTEST",
    "glob_matches",
    "protected_paths",
    "readonly_paths",
]

PYPROJECT_PYTEST = "pyproject.toml#pytest"
"""The pseudo-pattern for the pytest section of ``pyproject.toml``."""

DEFAULT_PROTECT: tuple[str, ...] = (
    "**/tests/**",
    "**/test/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "setup.cfg",
    ".github/**",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    PYPROJECT_PYTEST,
)
"""What a patch may not touch unless the gate says otherwise (``protect`` / ``--protect``)."""


def glob_matches(pattern: str, path: str) -> bool:
    """Whether POSIX ``path`` matches ``pattern`` (see the module docstring)."""
    return _regex(pattern).fullmatch(path) is not None


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def protected_paths(
    patch: ParsedPatch, patterns: Sequence[str], base_text: Callable[[str], str | None]
) -> tuple[str, ...]:
    """The paths of ``patch`` that touch a protected pattern, in patch order.

    Args:
        patch: The candidate's patch.
        patterns: Globs, and :data:`PYPROJECT_PYTEST` for the pytest section.
        base_text: The file's text at the base revision (``None`` when absent).

    Returns:
        Each offending path once.
    """
    hits: list[str] = []
    for change in patch.files:
        for path in dict.fromkeys([change.path, change.old_path or change.path]):
            if any(glob_matches(p, path) for p in patterns if p != PYPROJECT_PYTEST) or (
                PYPROJECT_PYTEST in patterns
                and path == "pyproject.toml"
                and _touches_pytest_section(change, base_text(path))
            ):
                hits.append(path)
    return tuple(dict.fromkeys(hits))


def readonly_paths(tree: str, patterns: Sequence[str], limit: int = 1000) -> list[str]:
    """Paths under ``tree`` (relative, POSIX) that ``patterns`` protect, directories whole.

    A directory every path under which is protected (``tests/`` for
    ``**/tests/**``) is listed once instead of its files; links are listed as
    the link, never followed. At most ``limit`` entries.
    """
    globs = [p for p in patterns if p != PYPROJECT_PYTEST]
    out: list[str] = []
    if PYPROJECT_PYTEST in patterns and os.path.isfile(os.path.join(tree, "pyproject.toml")):
        out.append("pyproject.toml")
    for dirpath, dirnames, filenames in os.walk(tree):
        rel = os.path.relpath(dirpath, tree)
        keep = []
        for d in sorted(dirnames):
            r = d if rel == "." else f"{rel}/{d}"
            if d != ".git" and any(glob_matches(p, r + "/_") for p in globs):
                out.append(r)
            elif not os.path.islink(os.path.join(dirpath, d)):
                keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            r = f if rel == "." else f"{rel}/{f}"
            if any(glob_matches(p, r) for p in globs):
                out.append(r)
        if len(out) >= limit:
            break
    return sorted(dict.fromkeys(out))[:limit]


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?")


def _touches_pytest_section(change: FileChange, base: str | None) -> bool:
    if change.kind != "modified" or base is None:
        return True  # a pyproject.toml created, deleted or renamed: all of it is new
    sections = _sections_by_line(base)
    for old_line, line in _changed_lines(change.text):
        header = _section(line[1:]) or ""
        if "pytest" in header or "pytest" in sections.get(old_line, ""):
            return True
    return False


def _changed_lines(text: str) -> list[tuple[int, str]]:
    """Each ``+``/``-`` line with the old-file line it replaces or follows."""
    out: list[tuple[int, str]] = []
    old = 0
    for line in text.splitlines():
        m = _HUNK.match(line)
        if m:
            old = int(m.group(1)) - 1
        elif line.startswith((" ", "-")) and not line.startswith("---"):
            old += 1
            if line.startswith("-"):
                out.append((old, line))
        elif line.startswith("+") and not line.startswith("+++"):
            out.append((max(old, 1), line))
    return out


def _section(line: str) -> str | None:
    m = _HEADER.match(line)
    return m.group(1) if m else None


def _sections_by_line(text: str) -> dict[int, str]:
    current, out = "", {}
    for n, line in enumerate(text.splitlines(), start=1):
        current = _section(line) or current
        out[n] = current
    return out


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.MULTILINE)
