"""Worker cgroups: a directory left behind by a killed process never blocks a new one."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sandbox import cgroups
from sandbox.cgroups import find_tree_cap
from sandbox.errors import IsolationUnavailable


def test_a_stale_cgroup_of_a_dead_process_with_this_pid_does_not_collide():
    """A run killed before it removed ``gradebox-<pid>-<n>`` leaves it; pids are reused.

    Seen in a full test run after other runs had been killed: 149 stale
    directories, and a test failing with ``FileExistsError`` on one of them.
    """
    try:
        cap = find_tree_cap()
    except IsolationUnavailable as exc:
        pytest.skip(f"no cgroup to create here: {exc}")
    parents = {cap.memory_parent, cap.pids_parent}
    start = next(cgroups._COUNTER) + 1  # the names the old scheme would give next
    stale = [p / f"gradebox-{os.getpid()}-{n}" for p in parents for n in range(start, start + 8)]
    made = []
    try:
        for d in stale:
            if not d.exists():
                d.mkdir()
                made.append(d)
        trees = [cap.create(64 * 1024 * 1024, 16) for _ in range(4)]
        assert len({t.dirs for t in trees}) == 4
        assert not {d for t in trees for d in t.dirs} & set(stale)
        for tree in trees:
            tree.remove()
    finally:
        for d in made:
            d.rmdir()


def _tree() -> subprocess.Popen[bytes]:
    """A real three-level tree: sh, two children (sleep, sh), and a grandchild (sleep)."""
    script = "sleep 60 & sh -c 'sleep 60 & wait' & wait"
    return subprocess.Popen(["sh", "-c", script], start_new_session=True)


def test_a_workers_tree_is_walked_down_from_its_root_not_scanned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The descendants a worker's cgroup takes in: the same as a scan of /proc finds,
    parents before children, read without listing every process on the host."""
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        pytest.skip("this kernel has no /proc/<pid>/task/<tid>/children (the scan is used)")
    proc = _tree()
    try:
        expected: list[int] = []
        deadline = time.monotonic() + 30
        while len(expected) < 3 and time.monotonic() < deadline:  # until all have started
            expected = cgroups._descendants_by_scan(proc.pid)
        assert len(expected) == 3, expected
        listed: list[str] = []
        listdir = os.listdir

        def spy(path: str) -> list[str]:
            listed.append(str(path))
            return listdir(path)

        monkeypatch.setattr(cgroups.os, "listdir", spy)
        walked = cgroups._descendants(proc.pid)
        monkeypatch.undo()
        assert sorted(walked) == sorted(expected)
        parents = {
            pid: int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            for pid in walked
        }
        for i, pid in enumerate(walked):
            assert parents[pid] == proc.pid or parents[pid] in walked[:i], (walked, parents)
        assert "/proc" not in listed, "every process on the host was listed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_held_counters_read_what_the_files_say_and_are_closed_once():
    """The counter files are held open and re-read; ``remove`` closes them, once."""
    try:
        cap = find_tree_cap()
    except IsolationUnavailable as exc:
        pytest.skip(f"no cgroup to create here: {exc}")
    before = set(os.listdir("/proc/self/fd"))
    tree = cap.create(64 * 1024 * 1024, 4)
    try:
        assert tree.held, "no counter file held open"
        # A process cap of 4 hit from inside the tree: the held files see the new count.
        script = "for i in 1 2 3 4 5 6; do sleep 1 & done; wait"
        proc = subprocess.Popen(["sh", "-c", f"read go; {script}"], stdin=subprocess.PIPE)
        tree.add_tree(proc.pid)
        proc.communicate(b"go\n", timeout=60)
        held = tree.hits()
        by_path = cgroups.CgroupTree(tree.dirs, tree.counters).hits()
        assert held == by_path
        assert held["processes"] >= 1, held
    finally:
        tree.remove()
    tree.remove()  # a second call closes nothing (a reused number belongs to someone else)
    assert set(os.listdir("/proc/self/fd")) <= before
    assert not tree.held
