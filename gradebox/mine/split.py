"""A commit's change split into the gold patch and the test patch, as gradebox reads them back.

The test part is every changed path the gate protects by default (the
:data:`~gradebox.patches.protect.DEFAULT_PROTECT` globs: test directories and
modules, ``conftest.py``, ini files, ``.github``...; ``pyproject.toml`` when its
``tool.pytest`` table changed); the gold patch is the rest. So the gold patch
never touches what the gate protects, and the test patch holds everything
the gate puts back to base before it applies the hidden tests.

Each part is written as git-style text (:func:`patch_text`, over
:func:`~gradebox.patches.changes.tree_changes` with git's ``new file mode`` and
``deleted file mode`` lines) and must come back through gradebox's own parser
and applier to the very trees it was made from; a commit whose change does
not (a binary file, bytes a unified diff cannot carry, a path gradebox
refuses) is ``does_not_apply``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gradebox.mine.model import Dropped, DropReason
from gradebox.patches.applier import ApplyFailed, apply_patch
from gradebox.patches.changes import binary, tree_changes
from gradebox.patches.diff import FileChange, PatchRefused, parse_patch
from gradebox.patches.protect import DEFAULT_PROTECT, PYPROJECT_PYTEST, glob_matches, protection
from gradebox.patches.testrun import INI_FILES
from gradebox.patches.tree import Entry, Tree, overlay

__all__ = [
    "NOOP_LINE",
    "Split",
    "noop_patch",
    "patch_text",
    "prefilter",
    "reverse_patch",
    "split_commit",
]

NOOP_LINE = b"# gradebox mine: a change that does nothing\n"
"""What the no-op patch appends to a file the gold patch changes."""
_GLOBS = tuple(p for p in DEFAULT_PROTECT if p != PYPROJECT_PYTEST)
_TESTS = ("**/tests/**", "**/test/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
"""What counts as a change to the tests (the test part holds every protected path)."""


@dataclass(frozen=True, slots=True)
class Split:
    """A commit's change in two parts, and the trees the tests run in."""

    patch: str
    """The gold patch (the change outside the tests)."""
    test_patch: str
    """The change to the tests and their configuration."""
    source_paths: tuple[str, ...]
    """Paths the gold patch changes."""
    test_paths: tuple[str, ...]
    """Paths the test patch changes."""
    base_tree: dict[str, Entry]
    """The parent with the test patch: where FAIL_TO_PASS tests must fail."""
    head_tree: dict[str, Entry]
    """The commit as the gate's deciding run sees it (root ini files as at base unless the
    test patch changes them): where they must pass."""


def is_test_path(path: str) -> bool:
    """A path the gate protects by its globs (``pyproject.toml`` is decided on its content)."""
    return any(glob_matches(g, path) for g in _GLOBS)


def changes_tests(path: str) -> bool:
    """A test module, a ``conftest.py`` or a file under a ``tests``/``test`` directory."""
    return any(glob_matches(g, path) for g in _TESTS)


def prefilter(paths: Iterable[str]) -> DropReason | None:
    """``no_tests`` or ``no_source`` from the changed paths alone (``None``: read on)."""
    paths = list(paths)
    if not any(changes_tests(p) for p in paths):
        return "no_tests"
    if not any(p.endswith(".py") and not is_test_path(p) for p in paths):
        return "no_source"
    return None


def split_commit(before: Tree, after: Tree, *, max_lines: int, max_files: int) -> Split | Dropped:
    """The commit's change (``before`` -> ``after``) split, or why it cannot be."""
    changes = tree_changes(before, after)
    shown = [c.path for c in changes if binary(before.get(c.path)) or binary(after.get(c.path))]
    if shown:
        return Dropped("does_not_apply", f"{shown[0]}: a binary change (a patch cannot carry it)")
    prot = protection(changes, before, after, (PYPROJECT_PYTEST,))
    tests = {c.path for c in changes if is_test_path(c.path)} | set(prot.touched)
    source = [c for c in changes if c.path not in tests]
    if not any(changes_tests(p) for p in tests):
        return Dropped("no_tests", "no test file changes")
    if not any(c.path.endswith(".py") for c in source):
        return Dropped("no_source", "no Python file outside the tests changes")
    size = _lines(source)
    test_size = _lines(c for c in changes if c.path in tests)
    if size > max_lines or test_size > max_lines or len(source) > max_files:
        why = f"patch {size} lines in {len(source)} files, test patch {test_size} lines"
        return Dropped("too_big", why)
    with_source = overlay(before, after, {c.path for c in source})
    with_tests = overlay(before, after, tests)
    patch, test_patch = patch_text(before, with_source), patch_text(before, with_tests)
    problem = _round_trip(before, after, patch, test_patch, with_source, with_tests)
    if problem is not None:
        return Dropped("does_not_apply", problem)
    head = overlay(after, before, set(INI_FILES) - tests)
    return Split(patch, test_patch, tuple(c.path for c in source), tuple(sorted(tests)),
                 with_tests, head)  # fmt: skip


def patch_text(before: Tree, after: Tree) -> str:
    """``before`` -> ``after`` as a git-style unified diff, file by file, sorted by path."""
    return "".join(c.text for c in tree_changes(before, after))


def noop_patch(before: Tree, split: Split) -> str:
    """A patch the tests cannot tell from none: a comment appended to a changed file.

    ``""`` (the empty patch) when the gold patch changes no Python file that is
    at base.
    """
    for path in split.source_paths:
        entry = before.get(path)
        if path.endswith(".py") and entry is not None and not entry.is_link:
            data = (
                entry.data if entry.data.endswith(b"\n") or not entry.data else entry.data + b"\n"
            )
            return patch_text(before, {**before, path: Entry(entry.mode, data + NOOP_LINE)})
    return ""


def reverse_patch(before: Tree, after: Tree, split: Split) -> str:
    """The gold patch taken back on top of the commit (``after``)."""
    return patch_text(after, overlay(after, before, set(split.source_paths)))


def _lines(changes: Iterable[FileChange]) -> int:
    return sum(c.added + c.removed for c in changes)


def _round_trip(
    before: Tree,
    after: Tree,
    patch: str,
    test_patch: str,
    with_source: Tree,
    with_tests: Tree,
) -> str | None:
    """Why the two texts do not give back the trees they were made from (``None``: they do)."""
    try:
        gold, tests = parse_patch(patch), parse_patch(test_patch)
        if apply_patch(before, gold).tree != with_source:
            return "the patch read back does not give the commit's source files"
        if apply_patch(before, tests).tree != with_tests:
            return "the test patch read back does not give the commit's test files"
        if apply_patch(with_source, tests).tree != after:
            return "the patch and the test patch read back do not give the commit"
    except (PatchRefused, ApplyFailed) as exc:
        return f"gradebox refuses or cannot apply its own diff: {exc}"[:300]
    return None
