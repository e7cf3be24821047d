"""Memory and process caps on a worker's whole process tree, through cgroups.

Resource limits (rlimits) are per process: 64 processes of 1 GiB each could
hold 64 GiB. A cgroup caps the tree: every process a candidate starts is born
inside its worker's cgroup and is charged there (tmpfs files included).

Two layouts are supported:

* cgroup v1 with the ``memory`` and ``pids`` controllers writable (the case
  when gradebox runs as root on most Linux hosts);
* cgroup v2 where the grader's own cgroup delegates ``memory`` and ``pids`` to
  its children (``cgroup.subtree_control``), e.g. under systemd with
  ``Delegate=yes``.

Each worker gets a child cgroup of the grader's own, named
``gradebox-<grader pid>-<n>``, removed when the worker ends.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.errors import IsolationUnavailable

__all__ = ["CgroupTree", "TreeCap", "find_tree_cap"]

_V1 = Path("/sys/fs/cgroup")
_V2_MOUNTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
_COUNTER = itertools.count()
_HINT = (
    "run gradebox as root, or give it a cgroup v2 subtree with the memory and pids "
    "controllers delegated (e.g. `systemd-run --user -p Delegate=yes --scope gradebox ...`); "
    "or accept per-process limits only with --no-tree-limits"
)


@dataclass(frozen=True, slots=True)
class TreeCap:
    """Where worker cgroups are created: one parent directory per controller."""

    memory_parent: Path
    """Parent dir for memory limits."""
    pids_parent: Path
    """Parent dir for process limits (the same as ``memory_parent`` on v2)."""
    v2: bool
    """True for the unified hierarchy."""

    def create(self, memory_bytes: int, max_pids: int) -> CgroupTree:
        """Create one worker's cgroup(s) with these limits."""
        dirs = self._make_dirs()
        if self.v2:
            _write(dirs[0] / "memory.max", str(memory_bytes))
            _write(dirs[0] / "memory.swap.max", "0", optional=True)
            _write(dirs[0] / "pids.max", str(max_pids))
        else:
            _write(dirs[0] / "memory.limit_in_bytes", str(memory_bytes))
            _write(dirs[0] / "memory.memsw.limit_in_bytes", str(memory_bytes), optional=True)
            _write(dirs[1] / "pids.max", str(max_pids))
        counters = tuple(d / f for d in dirs for f in _COUNTERS if (d / f).exists())
        held: list[tuple[int, str]] = []
        for path in counters:
            with contextlib.suppress(OSError):  # unreadable: it reads 0, as before
                held.append((os.open(path, os.O_RDONLY | os.O_CLOEXEC), path.name))
        return CgroupTree(tuple(dirs), counters, held)

    def _make_dirs(self) -> list[Path]:
        """This worker's new directories, under a name nobody has used.

        The name carries random bits: a process killed before it removed its
        cgroup leaves ``gradebox-<pid>-<n>`` behind, and a later process given
        the same pid would otherwise collide with it (seen after killed test runs).
        """
        for _ in range(8):
            name = f"gradebox-{os.getpid()}-{next(_COUNTER)}-{os.urandom(4).hex()}"
            dirs = [self.memory_parent / name]
            if self.pids_parent != self.memory_parent:
                dirs.append(self.pids_parent / name)
            made: list[Path] = []
            try:
                for d in dirs:
                    d.mkdir()
                    made.append(d)
            except FileExistsError:
                for d in made:
                    with contextlib.suppress(OSError):
                        d.rmdir()
                continue
            return dirs
        raise FileExistsError(f"no free cgroup name under {self.memory_parent}")


#: The counter files :meth:`CgroupTree.hits` reads: what each counts, and its keys (a
#: flat-keyed file) or none (a file holding one number). v2 has ``pids.events`` and
#: ``memory.events``; v1 ``pids.events``, ``memory.failcnt`` and ``memory.oom_control``.
_COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "pids.events": ("processes", ("max",)),
    "memory.events": ("memory", ("max", "oom_kill")),
    "memory.failcnt": ("memory", ()),
    "memory.oom_control": ("memory", ("oom_kill",)),
}


@dataclass(frozen=True, slots=True)
class CgroupTree:
    """One worker's cgroup directories (one per hierarchy)."""

    dirs: tuple[Path, ...]
    """The directories, removed by :meth:`remove`."""
    counters: tuple[Path, ...] | None = None
    """The counter files that exist in them (found once, by :meth:`TreeCap.create`:
    a cgroup's interface files never change); ``None``: look for every one each time."""
    held: list[tuple[int, str]] = field(default_factory=list, compare=False, hash=False)
    """The counter files held open (descriptor, file name), read again with ``pread``
    at offset 0 (each read makes the kernel write the file anew): an open, a read and
    a close cost ~14 us each, a ``pread`` ~0.8 us, and :meth:`hits` runs twice per
    candidate. Closed by :meth:`remove`, once (a cgroup is removed with its files open)."""

    def add_tree(self, root_pid: int) -> None:
        """Move ``root_pid`` and all its descendants in (before any candidate runs)."""
        for pid in [root_pid, *_descendants(root_pid)]:
            for d in self.dirs:
                _write(d / "cgroup.procs", str(pid))
            # Under memory pressure the kernel should kill a candidate, not the
            # worker: candidates raise their own score back at start.
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/oom_score_adj").write_text("-1000")

    def hits(self) -> dict[str, int]:
        """How often the tree has hit each cap so far: ``processes`` and ``memory``.

        Counters only grow; compare two readings to see what one candidate did
        (v2 ``pids.events``/``memory.events``; v1 ``pids.events``,
        ``memory.failcnt`` and ``memory.oom_control``). Unreadable counters read 0.
        Read twice per candidate, so each file is read once per call.
        """
        counts = {"processes": 0, "memory": 0}
        if held := tuple(self.held):
            for fd, name in held:
                what, keys = _COUNTERS[name]
                try:
                    text = os.pread(fd, 4096, 0).decode("ascii", "replace")
                except OSError:
                    continue
                counts[what] += _parse(text, keys)
            return counts
        files = self.counters
        if files is None:
            files = tuple(d / name for d in self.dirs for name in _COUNTERS)
        for path in files:
            what, keys = _COUNTERS[path.name]
            counts[what] += _count(str(path), keys)
        return counts

    def remove(self) -> None:
        """Remove the cgroups once their processes are gone (best effort, bounded)."""
        while self.held:  # popped first: a second call never closes a reused number
            fd, _ = self.held.pop()
            with contextlib.suppress(OSError):
                os.close(fd)
        deadline = time.monotonic() + 2.0
        for d in self.dirs:
            pause = 0.001  # the kernel empties a cgroup within a few ms of its last exit
            while d.exists():
                try:
                    d.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(pause)
                    pause = min(pause * 2, 0.01)


def find_tree_cap() -> TreeCap:
    """Find where this process may create capped child cgroups.

    Raises:
        IsolationUnavailable: Neither layout is usable; the message says how to fix it.
    """
    v1 = _own_v1_paths()
    if v1 is not None:
        return v1
    v2 = _own_v2_path()
    if v2 is not None:
        return v2
    raise IsolationUnavailable(
        "cannot cap the memory and processes of a candidate's process tree: no writable "
        f"cgroup with the memory and pids controllers; {_HINT}"
    )


def _own_v1_paths() -> TreeCap | None:
    rel: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(","):
            rel[c] = path
    if "memory" not in rel or "pids" not in rel:
        return None
    mem = _V1 / "memory" / rel["memory"].lstrip("/")
    pids = _V1 / "pids" / rel["pids"].lstrip("/")
    if (mem / "memory.limit_in_bytes").exists() and _writable_dir(mem) and _writable_dir(pids):
        return TreeCap(mem, pids, v2=False)
    return None


def _own_v2_path() -> TreeCap | None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            rel = line[3:].lstrip("/")
            # Our own cgroup first; as root, the hierarchy's root (exempt from the
            # no-internal-processes rule) when our own has nothing delegated.
            bases = [m / r for r in dict.fromkeys([rel, ""]) for m in _V2_MOUNTS]
            for base in bases:
                ctl = base / "cgroup.subtree_control"
                delegated = ctl.exists() and {"memory", "pids"} <= set(ctl.read_text().split())
                if delegated and _writable_dir(base):
                    return TreeCap(base, base, v2=True)
    return None


def _count(path: str, keys: tuple[str, ...]) -> int:
    """The sum of ``keys`` in a flat-keyed cgroup file (no keys: the number it holds).

    0 for what is absent or unreadable.
    """
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return 0
    return _parse(text, keys)


def _parse(text: str, keys: tuple[str, ...]) -> int:
    """The sum of ``keys`` in a flat-keyed cgroup file's text (no keys: the number it holds)."""
    if not keys:
        text = text.strip()
        return int(text) if text.isdigit() else 0
    total = 0
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in keys and value.strip().isdigit():
            total += int(value)
    return total


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def _write(path: Path, value: str, *, optional: bool = False) -> None:
    try:
        path.write_text(value)
    except FileNotFoundError:
        if not optional:
            raise


def _descendants(root: int) -> list[int]:
    """Every live descendant of ``root`` (parents before children).

    Walked down from ``root`` through ``/proc/<pid>/task/<tid>/children``: a few
    reads for a worker's tree. A scan of every process's ``stat`` costs about 0.1 ms
    per process on the host, paid at each worker's start (250 ms of it on a host
    with 2,700 entries in ``/proc``, zombies included). A kernel without those
    files (``CONFIG_PROC_CHILDREN`` off) gets the scan.
    """
    if not os.path.exists(f"/proc/{root}/task/{root}/children"):
        return _descendants_by_scan(root)
    out, todo = [], [root]
    while todo:
        kids = _children(todo.pop())
        out += kids
        todo += kids
    return out


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (none when it is gone)."""
    kids: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                kids += map(int, Path(f"/proc/{pid}/task/{tid}/children").read_text().split())
    return kids


def _descendants_by_scan(root: int) -> list[int]:
    """:func:`_descendants` from every process's parent in ``/proc/*/stat``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out
