"""Protected paths: the parts of a repository a patch may not touch (the tests and their setup).

A patch that edits the tests can make any suite pass (a lone ``conftest.py``
whose hook marks every report passed was scored resolved on SWE-bench
Verified). By default (:data:`DEFAULT_PROTECT`) these are protected: anything
under a ``tests``/``test`` directory, test modules (``test_*.py``,
``*_test.py``), every ``conftest.py``, pytest's ini files (``pytest.ini``,
``.pytest.ini``, ``pytest.toml``), ``tox.ini``, ``setup.cfg``, ``.github/**``,
interpreter start-up hooks (``sitecustomize.py``, ``usercustomize.py``,
``*.pth``: they run before pytest does, on the ``PYTHONPATH`` the tests get),
start-up hooks shaped as packages, ``*.egg-info``/``*.dist-info`` metadata,
and the pytest configuration of ``pyproject.toml`` (its ``tool.pytest`` table,
compared parsed at base and head, so dotted keys count; other changes to that
file are allowed).

Decisions are made on the trees before and after the patch
(:func:`protection`), never on the diff's text. Adding tests is the normal
case and is not a touch: a new test module (``test_*.py``, ``*_test.py``), or
an existing one whose every base statement is kept unchanged while new test
functions, classes or methods are added. Those run in a separate run at head
and are reported; the deciding run sees the test files as they are at base
(plus the hidden test patch). Any other change to a protected path (an edited
or deleted test, a conftest, an ini file, a start-up hook) is a touch, with its
lines.

:func:`readonly_paths` lists what of a tree the same patterns cover, so the
sandbox can mount it read-only: code running in the tests cannot rewrite them.

Patterns are globs over POSIX paths relative to the repository: ``*`` and
``?`` stay inside one path component, ``**`` spans any number of them
(``**/conftest.py`` matches ``conftest.py`` too). The matcher is a dozen lines
written here: the standard library's ``fnmatch`` lets ``*`` cross ``/`` and
``PurePath.match`` has no ``**`` before Python 3.13.
"""

from __future__ import annotations

import ast
import os
import re
import tomllib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from gradebox.patches.diff import FileChange
from gradebox.patches.tree import Entry, Tree

__all__ = [
    "DEFAULT_PROTECT",
    "PYPROJECT_PYTEST",
    "Protection",
    "glob_matches",
    "is_test_module",
    "protection",
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
    "**/sitecustomize/**",
    "**/usercustomize/**",
    "**/*.pth",
    "**/*.egg-info/**",
    "**/*.dist-info/**",
    "**/*.egg-link",
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


@dataclass(frozen=True, slots=True)
class Protection:
    """What a patch does to protected paths, decided on the trees before and after it."""

    touched: tuple[str, ...]
    """Protected paths it changes in a way that is not only new tests."""
    added_tests: tuple[str, ...]
    """Test modules it adds, or extends with new tests only (run at head, reported)."""
    new_test_ids: tuple[str, ...]
    """Node ids (prefixes) of the tests it adds: whole new files, new functions and classes."""
    lines: tuple[str, ...]
    """``path:line what`` for each touched path (at most 20 in all)."""


def protection(
    changes: Sequence[FileChange], before: Tree, after: Tree, patterns: Sequence[str]
) -> Protection:
    """Classify a patch's protected changes (see the module docstring).

    Args:
        changes: The changes between ``before`` and ``after`` (:func:`tree_changes`).
        before: The tree at base.
        after: The tree with the patch applied.
        patterns: Globs, and :data:`PYPROJECT_PYTEST` for the pytest section.
    """
    touched: list[str] = []
    added: list[str] = []
    ids: list[str] = []
    lines: list[str] = []
    for change in changes:
        path = change.path
        if path == "pyproject.toml" and PYPROJECT_PYTEST in patterns:
            if _pytest_config(before.get(path)) != _pytest_config(after.get(path)):
                touched.append(path)
                lines += _lines(change)
            continue
        if not any(glob_matches(p, path) for p in patterns if p != PYPROJECT_PYTEST):
            continue
        new_ids = _only_new_tests(path, before.get(path), after.get(path))
        if new_ids is None:
            touched.append(path)
            lines += _lines(change)
        elif new_ids:
            added.append(path)
            ids += new_ids
    return Protection(tuple(touched), tuple(added), tuple(ids), tuple(lines[:20]))


def is_test_module(path: str) -> bool:
    """``test_*.py`` or ``*_test.py`` (pytest's default module names), never a conftest."""
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _lines(change: FileChange) -> list[str]:
    out = [f"{change.path}:{n} removed or changed" for n in sorted(change.removed_lines)[:5]]
    out += [f"{change.path}:{n} added" for n in sorted(change.added_lines)[:5]]
    return out or [f"{change.path}:1 {change.kind}"]


def _only_new_tests(path: str, old: Entry | None, new: Entry | None) -> list[str] | None:
    """The node ids a test module's change adds, or ``None`` when it does more than add tests.

    A new test module (a plain file) adds itself. A changed one must keep every
    top-level statement of base, in order and unchanged (compared as syntax
    trees), or extend a class with new methods only; what it adds beside them
    runs only in the separate run of new tests.
    """
    if new is None or new.is_link or not is_test_module(path) or (old is not None and old.is_link):
        return None
    head = _parse(new.data)
    if head is None:
        return None
    if old is None:
        return [path]
    base = _parse(old.data)
    if base is None:
        return None
    return _added_defs(path, base.body, head.body)


def _parse(data: bytes) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _added_defs(path: str, base: list[ast.stmt], head: list[ast.stmt]) -> list[str] | None:
    ids: list[str] = []
    i = 0
    for stmt in base:
        want = ast.dump(stmt)
        while i < len(head) and ast.dump(head[i]) != want and not _extends(stmt, head[i]):
            ids += _new_ids(path, head[i])
            i += 1
        if i == len(head):
            return None
        if isinstance(stmt, ast.ClassDef) and ast.dump(head[i]) != want:
            ids += _new_methods(path, stmt, head[i])  # type: ignore[arg-type]  # _extends
        i += 1
    for extra in head[i:]:
        ids += _new_ids(path, extra)
    if _bound(base) & _bound(_extra(base, head)):
        return None  # a new definition that rebinds an old name changes an old test
    return ids


def _extra(base: list[ast.stmt], head: list[ast.stmt]) -> list[ast.stmt]:
    dumps = {ast.dump(s) for s in base}
    return [s for s in head if ast.dump(s) not in dumps and not isinstance(s, ast.ClassDef)]


def _bound(stmts: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(s.name)
    return out


def _extends(old: ast.stmt, new: ast.stmt) -> bool:
    """``new`` is class ``old`` with methods added only."""
    if not (isinstance(old, ast.ClassDef) and isinstance(new, ast.ClassDef)):
        return False
    if old.name != new.name or [ast.dump(x) for x in (*old.bases, *old.decorator_list)] != [
        ast.dump(x) for x in (*new.bases, *new.decorator_list)
    ]:
        return False
    kept = [ast.dump(s) for s in new.body]
    pos = 0
    for s in old.body:
        d = ast.dump(s)
        while pos < len(kept) and kept[pos] != d:
            pos += 1
        if pos == len(kept):
            return False
        pos += 1
    old_dumps = {ast.dump(s) for s in old.body}
    names = {s.name for s in old.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return all(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name not in names
        for s in new.body
        if ast.dump(s) not in old_dumps
    )


def _new_ids(path: str, stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith("test"):
        return [f"{path}::{stmt.name}"]
    if isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
        return [f"{path}::{stmt.name}"]
    return []


def _new_methods(path: str, old: ast.ClassDef, new: ast.ClassDef) -> list[str]:
    dumps = {ast.dump(s) for s in old.body}
    return [
        f"{path}::{new.name}::{s.name}"
        for s in new.body
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        and ast.dump(s) not in dumps
        and s.name.startswith("test")
    ]


def _pytest_config(entry: Entry | None) -> object:
    """The ``tool.pytest`` table of a pyproject.toml (the raw bytes when it does not parse)."""
    if entry is None:
        return None
    try:
        data = tomllib.loads(entry.data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return entry.data
    tool = data.get("tool")
    return tool.get("pytest") if isinstance(tool, dict) else None


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
