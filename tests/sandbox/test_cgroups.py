"""Worker cgroups: a directory left behind by a killed process never blocks a new one."""

from __future__ import annotations

import os

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
