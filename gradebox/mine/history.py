"""A repository's history, read as git objects: commits in a range, their messages and trees.

The repository is hostile input, as a patch is: it is read with the plumbing
the gate uses and under the gate's fixed git configuration (no system or
global files, no hooks, no fsmonitor, no optional locks): ``git rev-list``
for the commits of a range, ``git cat-file --batch`` for commit objects
(parsed here), ``git ls-tree -r -z`` for the listing of a tree, and
:class:`~gradebox.patches.tree.ObjectStore` for the trees themselves. Nothing
is checked out and nothing is written to the repository.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from gradebox.errors import BadInput
from gradebox.mine.model import Commit
from gradebox.patches.tree import GitError, ObjectStore
from gradebox.patches.tree import run_git as git

__all__ = ["Listing", "changed_paths", "commits_in_range", "listing", "read_commits"]

Listing = dict[str, tuple[str, str]]
"""Path -> (mode, blob id) of every file of a tree (submodules left out)."""

_MAX_MESSAGE = 64 * 1024
_HEX40 = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_DATE = re.compile(rb" (\d{1,12}) ([+-])(\d\d)(\d\d)$")
_MODES = {"100644", "100755", "120000"}


def commits_in_range(store: ObjectStore, rev_range: str | None) -> list[str]:
    """The non-merge commits of ``rev_range``, newest first.

    ``A..B`` is what ``B`` reaches and ``A`` does not; ``A..`` is ``A..HEAD``;
    ``B`` alone (or ``None``: ``HEAD``) is everything ``B`` reaches.

    Raises:
        BadInput: The range is not of those forms or names no commit here.
    """
    text = rev_range if rev_range is not None else "HEAD"
    if "..." in text:
        raise BadInput([f"--rev-range {text!r}: give A..B (a symmetric A...B is not a range)"])
    low, sep, high = text.partition("..")
    if not sep:
        low, high = "", text
    if sep and not low:
        raise BadInput([f"--rev-range {text!r}: give the older end, A..B"])
    try:
        include = store.commit(high or "HEAD")
        exclude = [f"^{store.commit(low)}"] if low else []
    except GitError as exc:
        raise BadInput([f"--rev-range {text!r}: {exc}"]) from exc
    out = git(["rev-list", "--no-merges", include, *exclude], store.git_dir).decode()
    return [line for line in out.split() if _HEX40.fullmatch(line)]


def read_commits(store: ObjectStore, shas: list[str]) -> dict[str, Commit]:
    """Each commit's parents, author date and message, read from its object.

    Raises:
        GitError: An id is not a commit of the repository.
    """
    if not shas:
        return {}
    if any(not _HEX40.fullmatch(s) for s in shas):
        raise GitError("a commit id that is not a full hexadecimal id")
    out = git(
        ["cat-file", "--batch"], store.git_dir, stdin="".join(f"{s}\n" for s in shas).encode()
    )
    found: dict[str, Commit] = {}
    pos = 0
    for sha in shas:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode("ascii", "replace").split(" ")
        if len(header) != 3 or header[1] != "commit":
            raise GitError(f"{sha[:12]} is not a commit of the repository")
        size = int(header[2])
        found[sha] = _parse_commit(sha, out[nl + 1 : nl + 1 + size])
        pos = nl + 1 + size + 1
    return found


def _parse_commit(sha: str, raw: bytes) -> Commit:
    head, _, body = raw.partition(b"\n\n")
    parents: list[str] = []
    created = None
    for line in head.split(b"\n"):
        if line.startswith(b"parent "):
            parent = line[7:].decode("ascii", "replace").strip()
            if _HEX40.fullmatch(parent):
                parents.append(parent)
        elif line.startswith(b"author "):
            created = _date(line)
    message = body[:_MAX_MESSAGE].decode("utf-8", "replace")
    return Commit(sha, tuple(parents), created, message)


def _date(line: bytes) -> str | None:
    """``author Name <mail> 1700000000 +0100`` -> the time in UTC, ISO 8601."""
    m = _DATE.search(line)
    if m is None:
        return None
    sign = -1 if m.group(2) == b"-" else 1
    offset = timedelta(hours=int(m.group(3)), minutes=int(m.group(4))) * sign
    try:
        when = datetime.fromtimestamp(int(m.group(1)), tz=timezone(offset))
    except (OverflowError, OSError, ValueError):
        return None
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def listing(store: ObjectStore, commit: str) -> Listing:
    """Every file of ``commit`` with its mode and blob id, without reading a blob.

    Raises:
        GitError: git failed.
    """
    raw = git(["ls-tree", "-r", "-z", "--full-tree", commit], store.git_dir)
    out: Listing = {}
    for record in raw.split(b"\0"):
        head, _, name = record.partition(b"\t")
        fields = head.decode("ascii", "replace").split(" ")
        if len(fields) == 3 and fields[1] == "blob" and fields[0] in _MODES:
            out[name.decode("utf-8", "surrogateescape")] = (fields[0], fields[2])
    return out


def changed_paths(before: Listing, after: Listing) -> list[str]:
    """Paths whose mode or blob differ (added and deleted ones included), sorted."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
