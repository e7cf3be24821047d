"""The helpers busy-machine tests decide with (``tests/support/waiting.py``) do what they say.

Each is shown to fail where it must: a wait that never comes ends with the thing
it waited for named, a condition that breaks is caught, an attack is replayed
only while starved and never more than asked, CPU is counted from a process's
reaped children too, and a deadline moves only while the counter moves.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import waiting
from waiting import Progress, holds_for, retry_starved, tree_cpu_s, wait_until


def test_wait_until_returns_the_first_truthy_value():
    values = iter([0, "", None, "here", "later"])
    assert wait_until(lambda: next(values), interval=0) == "here"


def test_wait_until_names_what_it_gave_up_on_and_its_last_value():
    with pytest.raises(AssertionError, match=r"waiting for the file: \[\]"):
        wait_until(list, timeout=0.05, interval=0.01, what="the file")


def test_holds_for_sees_a_condition_break_and_a_condition_hold():
    calls = iter([True, True, False])
    assert holds_for(lambda: next(calls, True), 5.0, interval=0) is False
    assert holds_for(lambda: True, 0.05, interval=0.01) is True


def test_retry_starved_plays_again_only_while_starved_and_at_most_tries_times():
    played: list[int] = []

    def attempt() -> int:
        played.append(len(played))
        return played[-1]

    assert retry_starved(attempt, lambda r: r < 1) == 1 and played == [0, 1]
    played.clear()
    assert retry_starved(attempt, lambda r: True, tries=3) == 2 and played == [0, 1, 2]
    played.clear()
    assert retry_starved(attempt, lambda r: False) == 0 and played == [0]


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
LIVE = BURN + "print(1, flush=True)\nimport sys\nsys.stdin.read()\n"


def test_tree_cpu_s_counts_live_children_and_the_ones_they_reaped():
    # A parent that burns nothing itself: one child burns 0.3 s of CPU and is reaped,
    # a second burns 0.3 s and stays alive until the parent's stdin closes.
    script = (
        "import subprocess, sys\n"
        f"subprocess.run([sys.executable, '-c', {BURN!r}], check=True)\n"
        f"live = subprocess.Popen([sys.executable, '-c', {LIVE!r}], stdout=subprocess.PIPE)\n"
        "live.stdout.readline()\nprint('ready', flush=True)\nsys.stdin.read()\nlive.kill()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        whole, children = tree_cpu_s(proc.pid), tree_cpu_s(proc.pid, own=False)
        assert children >= 0.55, children  # 0.6 s burnt, less a tick of rounding each
        assert children <= whole, (children, whole)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()


def test_tree_cpu_s_of_a_process_that_is_gone_is_nothing():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: its pid names nothing now
    assert tree_cpu_s(proc.pid) == 0.0


def test_progress_moves_its_deadline_while_the_counter_moves_and_stops_a_stall(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(waiting.time, "monotonic", lambda: now[0])
    counter = [0]
    progress = Progress(lambda: counter[0], stall_s=10.0, ceiling_s=100.0)
    for _ in range(8):  # 72 s of work, far past the stall window, but it moves
        now[0] += 9.0
        counter[0] += 1
        assert not progress.expired()
    now[0] += 9.0
    assert not progress.expired()  # 9 s without a move: still within the window
    now[0] += 2.0
    assert progress.expired()  # 11 s without a move: a stall


def test_progress_stops_at_its_ceiling_even_while_the_counter_moves(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(waiting.time, "monotonic", lambda: now[0])
    counter = [0]
    progress = Progress(lambda: counter[0], stall_s=10.0, ceiling_s=30.0)
    while now[0] < 30.0:
        now[0] += 5.0
        counter[0] += 1
        assert not progress.expired()
    now[0] += 5.0
    counter[0] += 1
    assert progress.expired()


def test_progress_measures_at_most_once_a_second(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(waiting.time, "monotonic", lambda: now[0])
    measured: list[float] = []

    def measure() -> int:
        measured.append(now[0])
        return len(measured)

    progress = Progress(measure)
    for _ in range(20):
        now[0] += 0.25
        progress.expired()
    assert len(measured) == 1 + 5, measured  # at creation, then once a second for 5 s
