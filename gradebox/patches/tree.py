"""Trees as bytes: read from git's object database, written by gradebox, never checked out.

A gate never checks a revision out and never lets git, ``patch`` or any other
host tool read a work tree: a checkout honours ``.gitattributes`` (filters,
``ident``, encodings) and every later git command in it reads the tree's and
``.git``'s configuration, which a patch could otherwise reach. Instead:

* :class:`ObjectStore` reads a repository's objects with ``git rev-parse``,
  ``git ls-tree -r -z`` and ``git cat-file --batch`` only (plumbing that applies
  no attribute, filter, hook or work-tree configuration), under a fixed
  configuration: system and global files off, hooks and fsmonitor off. It never
  writes to the repository.
* A :data:`Tree` maps each vetted path (:func:`check_path`) to an
  :class:`Entry` (mode and bytes). Submodules (``160000``) are left out.
* :func:`materialize` writes a tree into an empty directory: regular files
  first, symbolic links last, parents created by gradebox, so no write ever
  goes through a link; a path below another entry is refused.
* :func:`escaping_links` resolves every link of a tree *in the tree* (never on
  disk): one that leaves it, or a chain longer than 40 links, is reported.

The paths a gate vets, protects, scans and writes are the keys of these
mappings, and nothing else.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "Entry",
    "GitError",
    "Mode",
    "ObjectStore",
    "PathRefused",
    "Tree",
    "check_path",
    "escaping_links",
    "materialize",
    "overlay",
    "resolved",
    "run_git",
]

Mode = Literal["100644", "100755", "120000"]
"""A file's git mode: plain, executable, or a symbolic link (its bytes are the target)."""
MODES: tuple[Mode, ...] = ("100644", "100755", "120000")

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "LANG": "C",
    "PATH": "/usr/bin:/bin",
    "HOME": tempfile.gettempdir(),
}
_GIT_SAFE = [
    "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "safe.directory=*",
    "-c", "core.untrackedCache=false", "-c", "protocol.allow=never",
]  # fmt: skip
_MAX_LINK_DEPTH = 40
_HEX = re.compile(r"[0-9a-f]{4,64}")
_REV = re.compile(r"[A-Za-z0-9._/@{}^~+-]{1,200}")


class GitError(RuntimeError):
    """git failed on the repository itself (not the patch's doing): an infrastructure error."""


class PathRefused(ValueError):
    """A path must not be written (absolute, ``..``, ``.git``, control characters, below a file)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One file of a tree."""

    mode: Mode
    """``100644``, ``100755`` or ``120000`` (a link whose target is :attr:`data`)."""
    data: bytes
    """Its bytes (a link's target for ``120000``)."""

    @property
    def is_link(self) -> bool:
        """A symbolic link."""
        return self.mode == "120000"


Tree = Mapping[str, Entry]
"""Path (POSIX, relative, vetted) -> entry."""


def check_path(path: str) -> str:
    """``path`` if it may be written inside a repository; else :class:`PathRefused`.

    Refused: empty, absolute, a ``.``/``..``/empty component, a ``.git``
    component (any case), a backslash, a control character (C0, C1, DEL) or
    a bidi/zero-width format character.
    """
    if not path or path.startswith("/") or "\\" in path:
        raise PathRefused(f"{path!r}: a path outside the repository is refused")
    if any(ord(c) < 32 or 127 <= ord(c) < 160 or c in _INVISIBLE for c in path):
        raise PathRefused(f"{path!r}: a path with control or invisible characters is refused")
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise PathRefused(f"{path!r}: a path outside the repository is refused")
    if any(p.lower() == ".git" for p in parts):
        raise PathRefused(f"{path!r}: changes to git's own files are refused")
    return path


_INVISIBLE = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2066\u2067\u2068\u2069\ufeff"
)


def run_git(args: list[str], git_dir: Path, *, stdin: bytes | None = None) -> bytes:
    """Run read-only git plumbing on ``git_dir`` under the fixed configuration; stdout.

    Raises:
        GitError: git failed or could not be started.
    """
    try:
        proc = subprocess.run(
            ["git", *_GIT_SAFE, f"--git-dir={git_dir}", *args],
            input=stdin,
            capture_output=True,
            env=_GIT_ENV,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]}: {exc}") from exc
    if proc.returncode:
        err = proc.stderr.decode("utf-8", "replace").strip()[:300]
        raise GitError(f"git {args[0]} failed: {err}")
    return proc.stdout


class ObjectStore:
    """Read-only access to a repository's objects (see the module docstring)."""

    def __init__(self, repo: Path) -> None:
        """Find ``repo``'s git directory.

        Raises:
            GitError: ``repo`` is not a git repository.
        """
        repo = repo.resolve()
        dot = repo / ".git"
        if dot.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = dot.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                raise GitError(f"{repo} is not a git repository")
            dot = (repo / text.split(":", 1)[1].strip()).resolve()
        self.git_dir = dot if dot.is_dir() else repo
        if not (self.git_dir / "objects").is_dir() and not (self.git_dir / "commondir").is_file():
            raise GitError(f"{repo} is not a git repository")

    def commit(self, rev: str) -> str:
        """The full id of the commit ``rev`` names (a branch, tag, remote branch or id).

        Raises:
            GitError: ``rev`` is not a plain revision name, or names no commit here.
        """
        if not _REV.fullmatch(rev) or rev.startswith("-"):
            raise GitError(f"{rev!r} is not a revision name")
        for candidate in (rev, f"refs/remotes/origin/{rev}"):
            try:
                out = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options",
                            f"{candidate}^{{commit}}"], self.git_dir)  # fmt: skip
            except GitError:
                continue
            return out.decode().strip()
        raise GitError(f"{rev!r} is not a commit of the repository")

    def tree(self, commit: str) -> dict[str, Entry]:
        """Every file of ``commit`` (submodules left out).

        Raises:
            GitError: git failed, or the commit holds a path that must not be written.
        """
        listing = run_git(["ls-tree", "-r", "-z", "--full-tree", commit], self.git_dir)
        wanted: list[tuple[str, Mode, str]] = []
        for record in listing.split(b"\0"):
            if not record:
                continue
            head, _, raw = record.partition(b"\t")
            mode, kind, oid = head.decode().split(" ")
            if kind != "blob" or mode not in MODES:
                continue
            path = raw.decode("utf-8", "surrogateescape")
            try:
                check_path(path)
            except PathRefused as exc:
                raise GitError(f"commit {commit[:12]}: {exc}") from exc
            wanted.append((path, mode, oid))  # type: ignore[arg-type,unused-ignore]  # in MODES
        blobs = self.blobs([oid for _, _, oid in wanted])
        return {path: Entry(mode, blobs[oid]) for path, mode, oid in wanted}

    def blobs(self, oids: Iterable[str]) -> dict[str, bytes]:
        """The bytes of each blob id (hex only; a missing one raises :class:`GitError`)."""
        ids = list(dict.fromkeys(oids))
        if not ids:
            return {}
        if any(not _HEX.fullmatch(i) for i in ids):
            raise GitError("a blob id that is not hexadecimal")
        feed = "".join(f"{i}\n" for i in ids).encode()
        out = run_git(["cat-file", "--batch"], self.git_dir, stdin=feed)
        result: dict[str, bytes] = {}
        pos = 0
        for oid in ids:
            nl = out.index(b"\n", pos)
            header = out[pos:nl].decode()
            if header.endswith(" missing") or header.endswith(" ambiguous"):
                raise GitError(f"object {oid} is not in the repository")
            size = int(header.rsplit(" ", 1)[1])
            result[oid] = out[nl + 1 : nl + 1 + size]
            pos = nl + 1 + size + 1
        return result

    def blob(self, oid: str) -> bytes | None:
        """One blob by a (possibly abbreviated) hex id; ``None`` when it is not there."""
        if not _HEX.fullmatch(oid) or set(oid) == {"0"}:
            return None
        try:
            check = run_git(["cat-file", "--batch-check"], self.git_dir, stdin=f"{oid}\n".encode())
        except GitError:
            return None
        parts = check.decode().split()
        if len(parts) != 3 or parts[1] != "blob":
            return None
        return self.blobs([parts[0]])[parts[0]]

    def read(self, commit: str, path: str) -> bytes | None:
        """One file's bytes at ``commit`` (``None`` when it is not a file there)."""
        check_path(path)
        try:
            out = run_git(["ls-tree", "-z", "--full-tree", commit, "--", path], self.git_dir)
        except GitError:
            return None
        head = out.split(b"\t", 1)[0].decode()
        if not head:
            return None
        mode, kind, oid = head.split(" ")
        if kind != "blob" or mode == "120000":
            return None
        return self.blobs([oid])[oid]


def _ancestors(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def materialize(tree: Tree, dest: Path) -> None:
    """Write ``tree`` into the empty directory ``dest`` (see the module docstring).

    Raises:
        PathRefused: A path is not vetted, or lies below another entry of the tree.
    """
    for path in tree:
        check_path(path)
        for up in _ancestors(path):
            if up in tree:
                raise PathRefused(f"{path!r}: lies below the file {up!r}")
    root = str(dest)
    made: set[str] = set()
    links = []
    for path, entry in sorted(tree.items()):
        if entry.is_link:
            links.append((path, entry))
            continue
        full = os.path.join(root, path)
        _parents(root, path, made)
        fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(entry.data)
            # Whatever the grader's umask: the sandbox's uid must read the tree.
            os.fchmod(fh.fileno(), 0o755 if entry.mode == "100755" else 0o644)
    for path, entry in links:
        _parents(root, path, made)
        os.symlink(entry.data.decode("utf-8", "surrogateescape"), os.path.join(root, path))


def _parents(root: str, path: str, made: set[str]) -> None:
    """Create ``path``'s parent directories (mode 0755, never through a link)."""
    for up in _ancestors(path):
        if up in made:
            continue
        full = os.path.join(root, up)
        try:
            os.mkdir(full)
        except FileExistsError:
            if os.path.islink(full) or not os.path.isdir(full):
                why = f"{path!r}: lies below {up!r}, which is not a directory"
                raise PathRefused(why) from None
        os.chmod(full, 0o755, follow_symlinks=False)  # noqa: S103 - read by the sandbox's uid
        made.add(up)


def escaping_links(tree: Tree) -> list[str]:
    """Links of ``tree`` that resolve outside it, or through more than 40 links (in the tree)."""
    return sorted(p for p, e in tree.items() if e.is_link and _resolve(tree, p) is None)


def _resolve(tree: Tree, path: str) -> str | None:
    """Where ``path`` ends up inside the tree following its links; ``None`` if it leaves."""
    todo = path.split("/")
    done: list[str] = []
    hops = 0
    while todo:
        part = todo.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                return None
            done.pop()
            continue
        here = "/".join([*done, part])
        entry = tree.get(here)
        if entry is not None and entry.is_link:
            hops += 1
            target = entry.data.decode("utf-8", "surrogateescape")
            if hops > _MAX_LINK_DEPTH or target.startswith("/") or "\0" in target:
                return None
            todo = target.split("/") + todo
            continue
        done.append(part)
    return posixpath.join(*done) if done else ""


def resolved(tree: Tree) -> dict[str, Entry]:
    """``tree`` with each link to a file of the tree replaced by that file's entry.

    What a scan of ``calc/plug.py`` must read when it is a link to ``calc/data.txt``:
    the bytes Python would import under that name.
    """
    out = dict(tree)
    for path, entry in tree.items():
        if entry.is_link:
            target = _resolve(tree, path)
            found = tree.get(target) if target else None
            if found is not None and not found.is_link:
                out[path] = found
    return out


def overlay(tree: Tree, source: Tree, paths: set[str]) -> dict[str, Entry]:
    """``tree`` with each of ``paths`` as it is in ``source`` (absent there: removed)."""
    out = dict(tree)
    for p in paths:
        if p in source:
            out[p] = source[p]
        else:
            out.pop(p, None)
    return out


def read_tree_from_disk(root: Path) -> dict[str, Entry]:
    """A directory as a :data:`Tree` (links as links, never followed); for tests and checks."""
    out: dict[str, Entry] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = Entry("120000", os.readlink(full).encode("utf-8", "surrogateescape"))
            elif stat.S_ISREG(st.st_mode):
                mode: Mode = "100755" if st.st_mode & 0o111 else "100644"
                out[rel] = Entry(mode, Path(full).read_bytes())
    return out
