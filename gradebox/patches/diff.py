"""Read a unified diff into typed file changes, and refuse what must never be applied.

Parsing is :mod:`unidiff`'s; this module adds what a gate needs on top:

* **Refusals** (:class:`PatchRefused`, a candidate failure with a reason):
  a path that is absolute, has a ``..`` component or points into ``.git``; a
  binary hunk (``Binary files ... differ``, ``GIT binary patch``): it cannot be
  reviewed or scanned; a symbolic link (mode ``120000``) whose target is absolute
  or leaves the repository. The work tree is checked again after applying
  (:func:`gradebox.patches.apply.escaping_links`), whatever tool applied it.
* **Line sets per file**: added lines (new-file numbers), the lines of the
  hunks' context, and removed lines (old-file numbers), for the static filter
  modes, the tamper scan and the protected ``pyproject.toml`` section.
* :func:`without` drops some files' sections (``--protect-mode strip``).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Literal

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchedFile, PatchSet

__all__ = ["FileChange", "ParsedPatch", "PatchRefused", "parse_patch", "without"]

ChangeKind = Literal["added", "modified", "deleted", "renamed"]
"""What a patch does to one file."""


class PatchRefused(ValueError):
    """The patch must not be applied; ``reason`` says why (shown on the row)."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's part of a patch."""

    path: str
    """Path after the change (before it, for a deleted file), relative to the repository."""
    old_path: str | None
    """Path before the change, ``None`` for an added file."""
    kind: ChangeKind
    """Added, modified, deleted or renamed."""
    added_lines: frozenset[int]
    """1-based line numbers of added lines in the new file."""
    hunk_lines: frozenset[int]
    """New-file line numbers covered by the hunks (added and context lines)."""
    removed_lines: frozenset[int]
    """1-based line numbers of removed lines in the old file."""
    text: str
    """This file's section of the diff, as it would be applied."""

    @property
    def added(self) -> int:
        """Number of added lines."""
        return len(self.added_lines)

    @property
    def removed(self) -> int:
        """Number of removed lines."""
        return len(self.removed_lines)


@dataclass(frozen=True, slots=True)
class ParsedPatch:
    """A patch, file by file."""

    files: tuple[FileChange, ...]
    """Its files, in patch order."""

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the patch touches (old and new names of a rename)."""
        out: list[str] = []
        for f in self.files:
            out += [f.path] + ([f.old_path] if f.old_path and f.old_path != f.path else [])
        return tuple(dict.fromkeys(out))

    @property
    def text(self) -> str:
        """The patch as it will be applied."""
        return "".join(f.text for f in self.files)


def parse_patch(text: str) -> ParsedPatch:
    """Parse and vet a unified diff (git's format or plain ``diff -u``, ``-p1`` paths).

    Args:
        text: The diff.

    Returns:
        Its files.

    Raises:
        PatchRefused: It does not parse, or a file in it is refused (see the module).
    """
    try:
        patch = PatchSet(text)
    except (UnidiffParseError, UnicodeError, ValueError) as exc:
        raise PatchRefused(f"the patch does not parse as a unified diff: {exc}"[:300]) from exc
    files = tuple(_change(f) for f in patch)
    if text.strip() and not files:
        raise PatchRefused("the patch does not parse as a unified diff: no file headers")
    return ParsedPatch(files)


def without(patch: ParsedPatch, paths: set[str]) -> ParsedPatch:
    """The patch without the sections of files whose path (old or new) is in ``paths``."""
    keep = [f for f in patch.files if f.path not in paths and (f.old_path or "") not in paths]
    return ParsedPatch(tuple(keep))


def _change(f: PatchedFile) -> FileChange:
    info = str(f.patch_info or "")
    old = None if f.is_added_file else _strip(f.source_file)
    new = _strip(f.source_file) if f.is_removed_file else _strip(f.target_file)
    for p in (old, new):
        if p is not None:
            _check_path(p)
    if f.is_binary_file or "GIT binary patch" in info or "Binary files " in info:
        raise PatchRefused(f"{new}: binary change refused (it cannot be reviewed or scanned)")
    added, context, removed = set(), set(), set()
    link_target: list[str] = []
    for hunk in f:
        for line in hunk:
            if line.is_added and line.target_line_no is not None:
                added.add(line.target_line_no)
                context.add(line.target_line_no)
                link_target.append(line.value.rstrip("\n"))
            elif line.is_context and line.target_line_no is not None:
                context.add(line.target_line_no)
            elif line.is_removed and line.source_line_no is not None:
                removed.add(line.source_line_no)
    if "120000" in info:
        _check_link(new, "".join(link_target))
    kind: ChangeKind = (
        "added"
        if f.is_added_file
        else "deleted"
        if f.is_removed_file
        else "renamed"
        if old != new
        else "modified"
    )
    return FileChange(
        path=new,
        old_path=old,
        kind=kind,
        added_lines=frozenset(added),
        hunk_lines=frozenset(context),
        removed_lines=frozenset(removed),
        text=str(f) if str(f).endswith("\n") else str(f) + "\n",
    )


def _strip(name: str) -> str:
    for prefix in ("a/", "b/"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _check_path(path: str) -> None:
    parts = path.replace("\\", "/").split("/")
    if path.startswith("/") or ".." in parts or not path.strip():
        raise PatchRefused(f"{path!r}: a path outside the repository is refused")
    if ".git" in parts:
        raise PatchRefused(f"{path!r}: changes to git's own files are refused")


def _check_link(path: str, target: str) -> None:
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
        raise PatchRefused(f"{path}: a symbolic link out of the repository ({target!r}) is refused")
