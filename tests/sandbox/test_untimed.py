"""A play the grader could not time is played again, once: a stalled host fails nobody.

The sandbox keeps every clock on the wall: a case's limit inside (the supervisor),
the candidate's limit plus grace outside (the runner). A host that stops giving the
sandbox CPU (a busy or paused machine) looks, from either clock, like a candidate
that stopped its own sandbox. Nothing tells the two apart, so such a play is not
judged: the candidate is played once more, and only a second untimed play is a
timeout. These tests stall real bubblewrap workers from outside (SIGSTOP to the
whole worker tree, as a paused machine would) and check that an honest candidate
is graded by its replay, and that a candidate which stops its sandbox itself still
fails (the attack tests in ``test_conformance.py`` check that too).
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from waiting import live_children, retry_starved, wait_until

from sandbox import open_sandbox
from sandbox.cgroups import _descendants
from sandbox.runner import Sandbox
from sandbox.types import Limits, RunResult, make_case

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

HONEST = "def f(x):\n    return x + 1\n"
# Returns once it has seen its own clock jump (the test stalled it), or after 1.5 s
# (its replay, which nobody stalls); the case limit is 2 s.
STALLED = """
import ctypes, time

def f(x, marker):
    ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0)  # PR_SET_NAME: the test finds us
    start = last = time.monotonic()
    while True:
        now = time.monotonic()
        if now - last > 1.0 or now - start > 1.5:
            return x + 1
        last = now
        time.sleep(0.01)
"""


def _tree(root: int) -> list[int]:
    """``root`` and every process below it (the sandbox's own walk of ``/proc``)."""
    return [root, *_descendants(root)]


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            continue


def _comm_pids(name: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as fh:
                    if fh.read().strip() == name:
                        found.append(int(entry))
            except OSError:
                continue
    return found


@contextmanager
def _one_worker(limits: Limits) -> Iterator[tuple[Sandbox, list[int]]]:
    """A bubblewrap sandbox with one started worker, and that worker's processes."""
    before = live_children()
    sb = open_sandbox("bwrap", limits, workers=1)
    try:
        roots = live_children() - before
        assert len(roots) == 1, f"expected the one worker as our new child: {roots}"
        yield sb, _tree(roots.pop())
    finally:
        sb.close()


def test_an_honest_candidate_on_a_stalled_worker_is_graded_by_its_replay() -> None:
    limits = Limits(candidate_timeout_s=1.0)
    with _one_worker(limits) as (sb, pids):
        # The whole worker stalls before the job arrives: no reply comes within the
        # candidate's limit plus the runner's grace.
        _signal_all(pids, signal.SIGSTOP)
        res = sb.run(HONEST, "f", [make_case("f", 1, expect=2)])
        assert res.infra_error is None, res.infra_error
        assert res.observations[0].status == "returned", res.observations[0]
        assert res.observations[0].value == 2
        assert sb.replays == 1, "the silent play was not played again"
        assert sb.recycles == 1, "the silent worker was not thrown away"
        assert not [p for p in pids if _alive(p)], "the stalled worker was left running"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_case_that_ended_during_a_stall_is_played_again_not_failed() -> None:
    limits = Limits(case_timeout_s=2.0, candidate_timeout_s=8.0)

    def play() -> tuple[RunResult, int]:
        with _one_worker(limits) as (sb, pids):
            marker = f"gbx-st-{os.getpid() % 100000}"
            got: list[RunResult] = []
            runner = threading.Thread(
                target=lambda: got.append(
                    sb.run(STALLED, "f", [make_case("f", 1, marker, expect=2)])
                )
            )
            runner.start()
            try:
                # The case is running: stall the whole worker past the case's limit.
                wait_until(lambda: _comm_pids(marker), what="the candidate's process")
                everyone = _tree(pids[0])
                _signal_all(everyone, signal.SIGSTOP)
                stalled_until = time.monotonic() + limits.case_timeout_s + 0.5
                while time.monotonic() < stalled_until:  # the stall itself, not a wait
                    time.sleep(0.05)
                _signal_all(everyone, signal.SIGCONT)
            finally:
                runner.join()
            return got[0], sb.replays

    # The stall must land while the case runs (the candidate returns after 1.5 s on its
    # own): a test thread that saw the candidate too late on a busy machine plays again.
    res, replays = retry_starved(play, lambda r: r[1] == 0)
    assert res.infra_error is None, res.infra_error
    obs = res.observations[0]
    assert (obs.status, obs.value) == ("returned", 2), (
        f"a case that answered before a stall of the whole worker was judged {obs}"
    )
    assert replays == 1
