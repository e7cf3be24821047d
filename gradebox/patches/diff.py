"""Read a unified diff into typed file patches, and refuse what gradebox cannot apply itself.

:mod:`unidiff` splits the text into files and hunks; the names, modes and
blob ids of each file come from this module's own reading of the git header
lines, and are what :mod:`gradebox.patches.applier` writes: no other tool
reads the patch. Every name git's format allows is read the way git reads it
(C-quoted names with octal escapes decoded to UTF-8, ``a/``/``b/`` prefixes,
``rename``/``copy`` lines), and a file whose names disagree between its
header lines is refused rather than guessed at. Refused (:class:`PatchRefused`,
a candidate failure with a reason):

* a path that is absolute, has an empty, ``.`` or ``..`` component, a ``.git``
  component in any case, a backslash, or a control or invisible character
  (:func:`gradebox.patches.tree.check_path`);
* a path that appears twice; a name that is not valid UTF-8 or a quoted name
  that does not decode;
* a binary change (``GIT binary patch``, ``Binary files ... differ``): it cannot
  be reviewed or scanned; a mode other than ``100644``, ``100755`` or
  ``120000`` (a submodule, a tree); an absolute link target.

What the patch *does* is decided later, on the trees before and after it
(:mod:`gradebox.patches.changes`), never on this text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as UnidiffHunk
from unidiff.patch import PatchedFile, PatchSet

from gradebox.patches.tree import MODES, Mode, PathRefused, check_path

__all__ = [
    "ChangeKind",
    "FileChange",
    "FilePatch",
    "Hunk",
    "HunkLine",
    "ParsedPatch",
    "PatchRefused",
    "parse_patch",
    "without",
]

ChangeKind = Literal["added", "modified", "deleted", "renamed"]
"""What a patch does to one file."""

HunkLine = tuple[Literal[" ", "-", "+"], bytes]
"""One line of a hunk: context, removed or added, with its line end (if it has one)."""


class PatchRefused(ValueError):
    """The patch must not be applied; the message says why (shown on the row)."""


@dataclass(frozen=True, slots=True)
class Hunk:
    """One hunk."""

    old_start: int
    """1-based first line in the old file (0 for an empty old side)."""
    lines: tuple[HunkLine, ...]
    """Its lines in order."""

    @property
    def old(self) -> list[bytes]:
        """The lines it expects (context and removed)."""
        return [t for k, t in self.lines if k != "+"]

    @property
    def new(self) -> list[bytes]:
        """The lines it leaves (context and added)."""
        return [t for k, t in self.lines if k != "-"]


@dataclass(frozen=True, slots=True)
class FilePatch:
    """One file's part of a patch, as gradebox will apply it."""

    old_path: str | None
    """Path before (``None``: the file is added)."""
    new_path: str | None
    """Path after (``None``: the file is deleted)."""
    copy: bool
    """``copy from``/``copy to``: ``old_path`` stays, ``new_path`` starts as its copy."""
    old_mode: Mode | None
    """The mode the header says it had, when it says."""
    new_mode: Mode | None
    """The mode it gets, when the header says."""
    old_blob: str | None
    """The preimage's blob id from the ``index`` line (hex), for a three-way apply."""
    hunks: tuple[Hunk, ...]
    """Its hunks."""
    text: str
    """This file's section of the diff."""

    @property
    def path(self) -> str:
        """The path it ends at (where it was, for a deletion)."""
        return self.new_path or self.old_path or ""

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path it touches."""
        return tuple(p for p in dict.fromkeys([self.old_path, self.new_path]) if p)


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's change between two trees (:func:`gradebox.patches.changes.tree_changes`)."""

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
    """This file's section of a unified diff between the two trees."""

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

    files: tuple[FilePatch, ...]
    """Its files, in patch order."""

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the patch touches (old and new names of a rename)."""
        return tuple(dict.fromkeys(p for f in self.files for p in f.paths))

    @property
    def text(self) -> str:
        """The patch's text, file by file."""
        return "".join(f.text for f in self.files)


def parse_patch(text: str) -> ParsedPatch:
    """Parse and vet a unified diff (git's format or ``diff -u`` with one leading component).

    Raises:
        PatchRefused: It does not parse, or a file in it is refused (see the module).
    """
    try:
        patch = PatchSet(text)
    except (UnidiffParseError, UnicodeError, ValueError) as exc:
        raise PatchRefused(f"the patch does not parse as a unified diff: {exc}"[:300]) from exc
    files = tuple(_file(f) for f in patch)
    if text.strip() and not files:
        raise PatchRefused("the patch does not parse as a unified diff: no file headers")
    seen: set[str] = set()
    for f in files:
        mine = {f.path} if f.copy else set(f.paths)
        for p in mine:
            if p in seen:
                raise PatchRefused(f"{p!r}: the patch changes this path twice")
            seen.add(p)
    return ParsedPatch(files)


def without(patch: ParsedPatch, paths: set[str]) -> ParsedPatch:
    """The patch without the sections of files whose path (old or new) is in ``paths``."""
    return ParsedPatch(tuple(f for f in patch.files if not set(f.paths) & paths))


_GIT_HEADER = "diff --git "
_EXTENDED = re.compile(
    r"^(old mode|new mode|deleted file mode|new file mode|rename from|rename to|copy from|"
    r"copy to|similarity index|dissimilarity index|index) (.*)$"
)


def _file(f: PatchedFile) -> FilePatch:
    info = [ln.rstrip("\n") for ln in (f.patch_info or [])]
    binary = any(ln.startswith(("GIT binary patch", "Binary files ")) for ln in info)
    if binary or f.is_binary_file:
        raise PatchRefused(f"{_shown(f)}: binary change refused (it cannot be reviewed or scanned)")
    header = _git_header(info)
    fields: dict[str, str] = {}
    for ln in header:
        m = _EXTENDED.match(ln)
        if m:
            fields[m.group(1)] = m.group(2)
    old, new = _names(f, info, fields)
    old_mode, new_mode = _modes(fields)
    try:
        for p in (old, new):
            if p is not None:
                check_path(p)
    except PathRefused as exc:
        raise PatchRefused(str(exc)) from exc
    hunks = tuple(_hunk(h) for h in f)
    blob = None
    if "index" in fields:
        m = re.fullmatch(r"([0-9a-f]{4,64})\.\.([0-9a-f]{4,64})(?: \d+)?", fields["index"])
        if m is None:
            raise PatchRefused(f"{new or old}: an index line git would not write is refused")
        blob = m.group(1) if set(m.group(1)) != {"0"} else None
    if new_mode == "120000" and hunks:
        target = b"".join(t for k, t in hunks[-1].lines if k != "-").rstrip(b"\n")
        if target.startswith(b"/"):
            raise PatchRefused(f"{new}: a symbolic link out of the repository is refused")
    body = str(f)
    return FilePatch(
        old_path=old, new_path=new, copy="copy from" in fields, old_mode=old_mode,
        new_mode=new_mode, old_blob=blob, hunks=hunks,
        text=body if body.endswith("\n") else body + "\n",
    )  # fmt: skip


def _shown(f: PatchedFile) -> str:
    return repr((f.target_file or f.source_file or "?")[:200])


def _git_header(info: list[str]) -> list[str]:
    """The lines from the last ``diff --git`` line on (earlier lines are commentary)."""
    starts = [i for i, ln in enumerate(info) if ln.startswith(_GIT_HEADER)]
    return info[starts[-1] :] if starts else []


def _names(  # noqa: C901 - every way git states a name, checked in one place
    f: PatchedFile, info: list[str], fields: dict[str, str]
) -> tuple[str | None, str | None]:
    """Old and new path, each read every way the patch states it; all must agree."""
    header = _git_header(info)
    git_pair = _split_git_line(header[0][len(_GIT_HEADER) :]) if header else None
    src = _unquote(f.source_file) if f.source_file else None
    dst = _unquote(f.target_file) if f.target_file else None
    old = None if src in (None, "/dev/null") else _strip_prefix(src, "a/")
    new = None if dst in (None, "/dev/null") else _strip_prefix(dst, "b/")
    if f.source_file is None and f.target_file is None and git_pair is None:
        raise PatchRefused("a file section without names is refused")
    if git_pair is not None:
        g_old, g_new = (
            _strip_prefix(_unquote(n), p) for n, p in zip(git_pair, ("a/", "b/"), strict=True)
        )
        if "new file mode" in fields:
            old = None
        if "deleted file mode" in fields:
            new = None
        if f.source_file is None and "new file mode" not in fields:
            old = g_old
        if f.target_file is None and "deleted file mode" not in fields:
            new = g_new
        for side, named, want in (("old", old, g_old), ("new", new, g_new)):
            if named is not None and named != want:
                raise PatchRefused(f"{side} name {named!r} differs from the diff line's {want!r}")
    for key, got in (("rename from", old), ("copy from", old), ("rename to", new),
                     ("copy to", new)):  # fmt: skip
        if key in fields and _unquote(fields[key]) != got:
            raise PatchRefused(f"{key} {fields[key]!r} differs from the file's names")
    if old is None and new is None:
        raise PatchRefused("a file section that names no file is refused")
    if (
        old is not None
        and new is not None
        and old != new
        and not ({"rename from", "copy from"} & set(fields))
    ):
        raise PatchRefused(f"{old!r} -> {new!r}: a rename needs git's rename lines")
    return old, new


def _split_git_line(rest: str) -> tuple[str, str] | None:
    """``a/x b/x`` -> the two names (quoted ones whole; unquoted equal halves)."""
    if rest.startswith('"'):
        end = _quoted_end(rest)
        first, rest2 = rest[: end + 1], rest[end + 1 :]
        return (first, rest2[1:]) if rest2.startswith(" ") else None
    if rest.endswith('"'):
        start = rest.rfind(' "')
        return (rest[:start], rest[start + 1 :]) if start > 0 else None
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[:half][2:] == rest[half + 1 :][2:]:
        return rest[:half], rest[half + 1 :]
    parts = rest.split(" ")
    return (parts[0], parts[1]) if len(parts) == 2 else None


def _quoted_end(s: str) -> int:
    i = 1
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == '"':
            return i
        i += 1
    raise PatchRefused(f"an unterminated quoted name {s[:80]!r}")


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(name: str) -> str:
    """A name as git reads it: C-quoted names decoded (octal escapes are UTF-8 bytes)."""
    if not name.startswith('"'):
        return name
    if len(name) < 2 or _quoted_end(name) != len(name) - 1:
        raise PatchRefused(f"a quoted name git would not write: {name[:80]!r}")
    out = bytearray()
    i, body = 0, name[1:-1]
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
        elif body[i + 1 : i + 4].isdigit() and len(body[i + 1 : i + 4]) == 3:
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        elif i + 1 < len(body) and body[i + 1] in _ESCAPES:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        else:
            raise PatchRefused(f"a quoted name git would not write: {name[:80]!r}")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchRefused(f"a name that is not UTF-8: {name[:80]!r}") from exc


def _strip_prefix(name: str, prefix: str) -> str:
    """Drop the first component (``-p1``: ``a/x`` -> ``x``); absolute and one-part names refused.

    ``prefix`` is git's (``a/`` or ``b/``); ``diff -u`` names may have any first component.
    """
    if name.startswith("/"):
        raise PatchRefused(f"{name!r}: a path outside the repository is refused")
    _, sep, rest = name.partition("/")
    if not sep or not rest:
        raise PatchRefused(f"{name!r}: a name without a leading directory (-p1) is refused")
    del prefix
    return rest


def _modes(fields: dict[str, str]) -> tuple[Mode | None, Mode | None]:
    old = fields.get("old mode") or fields.get("deleted file mode")
    new = fields.get("new mode") or fields.get("new file mode")
    if old is None and new is None and "index" in fields:
        tail = fields["index"].split(" ")
        old = new = tail[1] if len(tail) == 2 else None
    for m in (old, new):
        if m is not None and m not in MODES:
            raise PatchRefused(f"mode {m!r} is refused (only files and links are applied)")
    return old, new  # type: ignore[return-value]  # checked against MODES


def _hunk(h: UnidiffHunk) -> Hunk:
    lines: list[tuple[Literal[" ", "-", "+"], bytes]] = []
    for line in h:
        kind, value = line.line_type, line.value.encode("utf-8", "surrogateescape")
        if kind == "\\":
            if lines and lines[-1][1].endswith(b"\n"):
                lines[-1] = (lines[-1][0], lines[-1][1][:-1])
        elif kind in (" ", "-", "+"):
            lines.append((kind, value))  # type: ignore[arg-type]  # checked just above
    return Hunk(int(h.source_start), tuple(lines))
