"""Apply a parsed patch to a tree, in memory: the only applier a gate uses.

The patch's text is read once, by :mod:`gradebox.patches.diff`; this module
computes the tree after it from the tree before it and the parsed file
patches, so the paths it writes are exactly the vetted keys of those records
(no tool reads a name from the text a second time). Nothing here runs a
program or touches the disk.

Per file, the ladder (the row records the highest rung any file needed):

1. ``exact``: every hunk's expected lines are where its header says;
2. ``offset``: some hunk's lines are found elsewhere, nearest its stated
   line first (as ``git apply`` and ``patch`` do);
3. ``3way``: the file does not match, but the patch's ``index`` line names a
   preimage blob the repository has: the hunks are applied to that blob
   exactly and the result is merged into the base file (:mod:`merge3`);
   a conflict is a failure;
4. ``fuzz``: up to :data:`MAX_FUZZ` context lines at each end of a hunk are
   ignored (GNU ``patch --fuzz``), nearest first.

Hunks of one file apply in order and never overlap. A deletion must match
the whole file. A path may not lie below a file of the tree, nor a file
replace a directory; links in the result must stay inside the tree
(:func:`gradebox.patches.tree.escaping_links`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from gradebox.patches.diff import FilePatch, Hunk, ParsedPatch
from gradebox.patches.tree import Entry, Mode, Tree, escaping_links

__all__ = ["MAX_FUZZ", "Applied", "ApplyFailed", "ApplyStrategy", "LinkRefused", "apply_patch"]

ApplyStrategy = Literal["exact", "offset", "3way", "fuzz", "head"]
"""How the patch went in: every hunk where it says, some hunks shifted, through the
preimage blob and a three-way merge, with context lines ignored; ``head``: no patch,
the head revision's tree as committed (``--head``)."""
_RANK: dict[ApplyStrategy, int] = {"exact": 0, "offset": 1, "3way": 2, "fuzz": 3, "head": 4}
MAX_FUZZ = 3
"""Most context lines ignored at each end of a hunk (``patch --fuzz=3``)."""


class ApplyFailed(ValueError):
    """The patch does not apply to this tree; the message says where."""


class LinkRefused(ApplyFailed):
    """The patch would leave a symbolic link that resolves outside the tree (refused)."""


@dataclass(frozen=True, slots=True)
class Applied:
    """The tree after a patch."""

    tree: dict[str, Entry]
    """Path -> entry after the patch."""
    strategy: ApplyStrategy
    """The highest rung any file needed."""


def apply_patch(
    before: Tree, patch: ParsedPatch, *, blob: Callable[[str], bytes | None] | None = None
) -> Applied:
    """The tree after ``patch``; ``blob`` reads a preimage by id for the ``3way`` rung.

    Raises:
        ApplyFailed: A hunk does not match, a file is missing or already there, a path
            lies below a file, or a link leaves the tree.
    """
    tree = dict(before)
    worst: ApplyStrategy = "exact"
    for fp in patch.files:
        rung = _apply_file(tree, before, fp, blob)
        worst = rung if _RANK[rung] > _RANK[worst] else worst
    _check_shape(tree)
    links = escaping_links(tree)
    if links:
        raise LinkRefused("symbolic links out of the repository: " + ", ".join(links[:10]))
    return Applied(tree, worst)


def _apply_file(
    tree: dict[str, Entry],
    before: Tree,
    fp: FilePatch,
    blob: Callable[[str], bytes | None] | None,
) -> ApplyStrategy:
    old = None if fp.old_path is None else tree.get(fp.old_path)
    if fp.old_path is not None and old is None:
        raise ApplyFailed(f"{fp.old_path}: not in the tree")
    if fp.old_path is None and fp.new_path is not None and fp.new_path in tree:
        raise ApplyFailed(f"{fp.new_path}: already exists")
    if fp.new_path is not None and fp.new_path != fp.old_path and fp.new_path in tree:
        raise ApplyFailed(f"{fp.new_path}: already exists")
    data = b"" if old is None else old.data
    rung: ApplyStrategy = "exact"
    if fp.hunks:
        data, rung = _ladder(data, fp, blob)
    if fp.new_path is None:
        if data:
            raise ApplyFailed(f"{fp.old_path}: the deletion does not remove the whole file")
        del tree[fp.old_path or ""]
        return rung
    mode: Mode = fp.new_mode or (old.mode if old is not None else "100644")
    kinds = {old.mode, fp.old_mode} if old is not None and fp.old_mode is not None else set()
    if len(kinds) == 2 and "120000" in kinds:
        raise ApplyFailed(f"{fp.old_path}: the patch expects a different kind of file")
    if fp.old_path is not None and fp.old_path != fp.new_path and not fp.copy:
        del tree[fp.old_path]
    tree[fp.new_path] = Entry(mode, data)
    return rung


def _ladder(
    data: bytes, fp: FilePatch, blob: Callable[[str], bytes | None] | None
) -> tuple[bytes, ApplyStrategy]:
    lines = _split(data)
    try:
        return _join(_hunks(lines, fp.hunks, fuzz=0)), _offset_or_exact(lines, fp.hunks)
    except ApplyFailed as first:
        merged = _three_way(data, fp, blob)
        if merged is not None:
            return merged, "3way"
        for fuzz in range(1, MAX_FUZZ + 1):
            try:
                return _join(_hunks(lines, fp.hunks, fuzz=fuzz)), "fuzz"
            except ApplyFailed:
                continue
        raise ApplyFailed(f"{fp.path}: {first}") from None


def _offset_or_exact(lines: list[bytes], hunks: tuple[Hunk, ...]) -> ApplyStrategy:
    for h in hunks:
        at = _stated(h)
        if lines[at : at + len(h.old)] != h.old:
            return "offset"
    return "exact"


def _hunks(lines: list[bytes], hunks: tuple[Hunk, ...], *, fuzz: int) -> list[bytes]:
    out: list[bytes] = []
    pos = 0  # next unconsumed line of ``lines``
    delta = 0  # how far the last hunk was found from where it said (old-file lines)
    for n, h in enumerate(hunks, start=1):
        old, new, lead = _trimmed(h, fuzz)
        stated = _stated(h)
        at = _find(lines, old, stated + delta + lead, pos)
        if at is None:
            raise ApplyFailed(f"hunk {n} (line {h.old_start}) does not match")
        out += lines[pos:at]
        out += new
        pos = at + len(old)
        delta = at - lead - stated
    return out + lines[pos:]


def _stated(h: Hunk) -> int:
    """The 0-based old-file line a hunk says it starts at (after line N when it removes none)."""
    return max(h.old_start - 1, 0) if h.old else h.old_start


def _trimmed(h: Hunk, fuzz: int) -> tuple[list[bytes], list[bytes], int]:
    """The hunk's old and new lines with up to ``fuzz`` context lines cut at each end."""
    kinds = [k for k, _ in h.lines]
    lead = 0
    while lead < fuzz and lead < len(kinds) and kinds[lead] == " ":
        lead += 1
    trail = 0
    while trail < fuzz and trail < len(kinds) - lead and kinds[len(kinds) - 1 - trail] == " ":
        trail += 1
    kept = h.lines[lead : len(h.lines) - trail]
    return [t for k, t in kept if k != "+"], [t for k, t in kept if k != "-"], lead


def _find(lines: list[bytes], old: list[bytes], want: int, start: int) -> int | None:
    """Where ``old`` occurs at or after ``start``, nearest ``want`` first."""
    last = len(lines) - len(old)
    if last < start:
        return None
    want = min(max(want, start), last)
    for step in range(max(want - start, last - want) + 1):
        for at in (want - step, want + step) if step else (want,):
            if start <= at <= last and lines[at : at + len(old)] == old:
                return at
    return None


def _three_way(
    data: bytes, fp: FilePatch, blob: Callable[[str], bytes | None] | None
) -> bytes | None:
    if blob is None or fp.old_blob is None or fp.old_path is None:
        return None
    pre = blob(fp.old_blob)
    if pre is None:
        return None
    try:
        post = _join(_hunks(_split(pre), fp.hunks, fuzz=0))
    except ApplyFailed:
        return None
    from merge3 import Merge3  # noqa: PLC0415 - only for the rare three-way rung

    m = Merge3(_split(pre), _split(data), _split(post))
    if any(group[0] == "conflict" for group in m.merge_regions()):
        return None
    return b"".join(m.merge_lines())


def _split(data: bytes) -> list[bytes]:
    r"""Lines with their ends (``\\n`` only: a lone ``\\r`` is part of its line)."""
    if not data:
        return []
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    return out + ([parts[-1]] if parts[-1] else [])


def _join(lines: list[bytes]) -> bytes:
    return b"".join(lines)


def _check_shape(tree: Mapping[str, Entry]) -> None:
    """No path lies below another file of the tree (a file cannot be a directory too)."""
    for path in tree:
        parts = path.split("/")
        for i in range(1, len(parts)):
            up = "/".join(parts[:i])
            if up in tree:
                raise ApplyFailed(f"{path}: lies below the file {up}")
