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
from dataclasses import dataclass
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
        name = f"gradebox-{os.getpid()}-{next(_COUNTER)}"
        dirs = [self.memory_parent / name]
        if self.pids_parent != self.memory_parent:
            dirs.append(self.pids_parent / name)
        for d in dirs:
            d.mkdir()
        if self.v2:
            _write(dirs[0] / "memory.max", str(memory_bytes))
            _write(dirs[0] / "memory.swap.max", "0", optional=True)
            _write(dirs[0] / "pids.max", str(max_pids))
        else:
            _write(dirs[0] / "memory.limit_in_bytes", str(memory_bytes))
            _write(dirs[0] / "memory.memsw.limit_in_bytes", str(memory_bytes), optional=True)
            _write(dirs[1] / "pids.max", str(max_pids))
        return CgroupTree(tuple(dirs))


@dataclass(frozen=True, slots=True)
class CgroupTree:
    """One worker's cgroup directories (one per hierarchy)."""

    dirs: tuple[Path, ...]
    """The directories, removed by :meth:`remove`."""

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
        """
        counts = {"processes": 0, "memory": 0}
        for d in self.dirs:
            counts["processes"] += _field(d / "pids.events", "max")
            counts["memory"] += _field(d / "memory.events", "max") + _field(
                d / "memory.events", "oom_kill"
            )
            counts["memory"] += _number(d / "memory.failcnt")
            counts["memory"] += _field(d / "memory.oom_control", "oom_kill")
        return counts

    def remove(self) -> None:
        """Remove the cgroups once their processes are gone (best effort, bounded)."""
        deadline = time.monotonic() + 2.0
        for d in self.dirs:
            while d.exists():
                try:
                    d.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)


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


def _field(path: Path, key: str) -> int:
    """The value of ``key`` in a flat-keyed cgroup file, 0 when absent or unreadable."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        pass
    return 0


def _number(path: Path) -> int:
    try:
        text = path.read_text().strip()
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def _write(path: Path, value: str, *, optional: bool = False) -> None:
    try:
        path.write_text(value)
    except FileNotFoundError:
        if not optional:
            raise


def _descendants(root: int) -> list[int]:
    """Every live descendant of ``root``, from /proc (parents before children)."""
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
