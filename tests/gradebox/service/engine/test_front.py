"""The extract and gate pool: worker processes, one pipe each, no helper thread.

Real processes on ``forkserver``, real pipes. What the budget does to a slow sample
is in ``tests/gradebox/service/test_attack_load.py``; here: replies never cross
between callers, a worker that dies is told apart and replaced, a grader bug in a
worker is raised in the server, and closing ends every wait.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from gradebox.pipeline.tests import FrontJob, FrontResult
from gradebox.service.engine.front import FrontFailure, FrontPool

# ~6 s of gating and more on a busy machine: it is still running when the test acts.
_SLOW = "def is_even(n):\n    return n % 2 == 0\n" + "y = 1\n" * 420_000


def _job(fn: str, code: str) -> FrontJob:
    return FrontJob(fn, None, code, None, ("os",), False, False)


@pytest.fixture
def pool():
    front = FrontPool(2)
    front.start()
    yield front
    front.close()


def test_replies_never_cross_between_threads(pool):
    """Eight threads share two workers; each gets the answer to its own sample."""

    def one(i: int) -> tuple[int, str]:
        fn = f"f{i}"
        # Every other sample misses its entry point: the contract differs by sample.
        code = f"def {fn}():\n    return {i}\n" if i % 2 else f"def g{i}():\n    return {i}\n"
        found = pool.check(_job(fn, code), budget_s=120.0)
        assert isinstance(found, FrontResult), found
        assert found.extraction.code == code
        return i, found.extraction.contract

    with ThreadPoolExecutor(8) as ex:
        results = list(ex.map(one, range(200)))
    assert all((c == "ok") == bool(i % 2) for i, c in results), results


def _ticks(pid: int) -> int:
    """User CPU time of ``pid`` in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[11])


def test_a_worker_killed_mid_sample_is_told_apart_and_replaced(pool):
    found: list[FrontResult | FrontFailure] = []
    t = threading.Thread(target=lambda: found.append(pool.check(_job("is_even", _SLOW), 600)))
    # Both workers said ready (warm-up done): from here only the one parsing the
    # slow sample gains CPU time. An absolute bound would also pick an idle worker
    # whose warm-up alone passed it on a busy machine.
    before = {w.process.pid: _ticks(w.process.pid) for w in pool._live}
    t.start()
    deadline = time.monotonic() + 120
    busy = None
    while busy is None and time.monotonic() < deadline:
        for pid, ticks in before.items():
            if _ticks(pid) - ticks > 20:  # parsing the sample
                busy = pid
        time.sleep(0.01)
    assert busy is not None, "no worker took the sample"
    os.kill(busy, signal.SIGKILL)
    t.join(120)
    [failure] = found
    assert isinstance(failure, FrontFailure) and failure.reason == "worker_died", failure
    assert str(-signal.SIGKILL) in failure.message
    # Both workers serve again: the one replaced and the other.
    for i in range(4):
        again = pool.check(_job("f", "def f():\n    return 1\n"), budget_s=120.0)
        assert isinstance(again, FrontResult), (i, again)
    deadline = time.monotonic() + 120
    while len(pool._live) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(pool._live) == 2 and busy not in {w.process.pid for w in pool._live}


def test_a_grader_bug_in_a_worker_is_raised_in_the_server(pool):
    with pytest.raises(AttributeError):  # check_front reads the code as a str
        pool.check(FrontJob("f", None, 12345, None, (), False, False), budget_s=120.0)  # type: ignore[arg-type]
    assert isinstance(pool.check(_job("f", "def f():\n    return 1\n"), 120.0), FrontResult)


def test_closing_ends_a_sample_in_flight_and_every_later_one():
    front = FrontPool(1)
    front.start()
    found: list[FrontResult | FrontFailure] = []
    t = threading.Thread(target=lambda: found.append(front.check(_job("is_even", _SLOW), 600)))
    [worker] = front._live
    ticks = _ticks(worker.process.pid)
    t.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _ticks(worker.process.pid) - ticks <= 20:
        time.sleep(0.01)
    front.close()
    t.join(120)
    assert not t.is_alive()
    [failure] = found
    assert isinstance(failure, FrontFailure) and failure.reason == "closed", failure
    later = front.check(_job("f", "def f():\n    return 1\n"), budget_s=1.0)
    assert isinstance(later, FrontFailure) and later.reason == "closed"
    assert not worker.process.is_alive()
