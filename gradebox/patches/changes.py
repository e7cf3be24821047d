"""What a patch changed, read from the trees before and after it (never from its text).

:func:`tree_changes` compares two :data:`~gradebox.patches.tree.Tree` mappings
path by path (bytes and mode): every path whose entry differs is one
:class:`~gradebox.patches.diff.FileChange`, with added, context and removed
line numbers from :mod:`difflib` (3 lines of context) and a unified diff of
it for the judge and the diff-size layer. A link's "text" is its target. A
file whose bytes are not UTF-8, or hold a NUL, is :func:`binary`: the gate
refuses such changes (they cannot be reviewed or scanned).

Renames are not detected (a deletion and an addition): protection, tamper
and static decisions look at every path on both sides anyway.
"""

from __future__ import annotations

import difflib
import re

from gradebox.patches.diff import ChangeKind, FileChange
from gradebox.patches.tree import Entry, Tree

__all__ = ["binary", "tree_changes"]


def binary(entry: Entry | None) -> bool:
    """Bytes the gate cannot review as text (a NUL, or not UTF-8)."""
    if entry is None:
        return False
    if b"\0" in entry.data:
        return True
    try:
        entry.data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def tree_changes(before: Tree, after: Tree) -> tuple[FileChange, ...]:
    """Every path whose entry differs between ``before`` and ``after``, sorted by path."""
    out = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        kind: ChangeKind = "added" if old is None else "deleted" if new is None else "modified"
        out.append(_change(path, kind, old, new))
    return tuple(out)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _lines(entry: Entry | None) -> list[str]:
    r"""Lines as Python's tokenizer and the static tools count them (``\n``, ``\r\n``, ``\r``).

    ``str.splitlines`` would also break at form feeds and other separators,
    so line numbers would disagree with the AST's and a scan by line could miss.
    """
    if entry is None:
        return []
    return _LINE.findall(entry.data.decode("utf-8", "replace"))


def _change(path: str, kind: ChangeKind, old: Entry | None, new: Entry | None) -> FileChange:
    a, b = _lines(old), _lines(new)
    added: set[int] = set()
    context: set[int] = set()
    removed: set[int] = set()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(3):
        for tag, i1, i2, j1, j2 in group:
            context.update(range(j1 + 1, j2 + 1))
            if tag in ("replace", "insert"):
                added.update(range(j1 + 1, j2 + 1))
            if tag in ("replace", "delete"):
                removed.update(range(i1 + 1, i2 + 1))
    if old is not None and new is not None and old.mode != new.mode and not (added or removed):
        context.add(1)
    header = [f"--- {'/dev/null' if old is None else 'a/' + path}\n",
              f"+++ {'/dev/null' if new is None else 'b/' + path}\n"]  # fmt: skip
    body = list(difflib.unified_diff(a, b, n=3))[2:]
    if new is None:
        mode = f"deleted file mode {old.mode}\n" if old is not None else ""
    elif old is None:
        mode = f"new file mode {new.mode}\n"
    else:
        mode = "" if old.mode == new.mode else f"old mode {old.mode}\nnew mode {new.mode}\n"
    text = (
        f"diff --git a/{path} b/{path}\n{mode}"
        + "".join(header if body else [])
        + "".join(
            ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in body
        )
    )
    return FileChange(
        path=path, old_path=None if old is None else path, kind=kind,
        added_lines=frozenset(added), hunk_lines=frozenset(context),
        removed_lines=frozenset(removed), text=text,
    )  # fmt: skip
