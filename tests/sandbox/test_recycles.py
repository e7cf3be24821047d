"""``Sandbox.recycles``: how many workers the sandbox threw away, and only those.

Real bubblewrap sandboxes, real candidates: the honest ones never move the count;
``kill_parent`` (SIGKILL to the sandbox's own processes) ends its worker, which is
replaced, and counts once each time, from many threads at once too. Attacks run
under ``bwrap`` only: never without isolation.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sandbox import open_sandbox
from sandbox.types import Limits, make_case

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

ATTACKS = Path(__file__).parent / "attacks"
KILL = (ATTACKS / "kill_parent.py").read_text()
HONEST = "def f(x, marker):\n    print(marker)\n    return x + 1\n"
LIMITS = Limits(candidate_timeout_s=2.0)


def cases() -> list:
    return [make_case("f", 1, "gbx-recycles", expect=2)]


def test_honest_candidates_never_recycle_and_closing_does_not_count():
    sb = open_sandbox("bwrap", LIMITS, workers=2)
    try:
        assert sb.recycles == 0  # the self-check's probe left its worker clean
        for _ in range(6):
            res = sb.run(HONEST, "f", cases())
            assert res.infra_error is None and res.observations[0].value == 2
        # A worker that went silent (a host stalled past the limit plus grace) is thrown
        # away and its candidate played again (test_untimed.py): only that may count.
        assert sb.recycles <= sb.replays
        counted = sb.recycles
    finally:
        sb.close()
    assert sb.recycles == counted


def test_a_killed_worker_counts_once_and_is_replaced():
    sb = open_sandbox("bwrap", LIMITS, workers=1)
    try:
        res = sb.run(KILL, "f", cases())
        assert res.infra_error is None and res.observations[0].status != "returned"
        assert sb.recycles == 1
        res = sb.run(HONEST, "f", cases())  # on a fresh worker
        assert res.observations[0].value == 2
        assert sb.recycles == 1
        with pytest.raises(AttributeError):
            sb.recycles = 0  # type: ignore[misc]  # read-only
    finally:
        sb.close()


def test_recycles_from_many_threads_are_all_counted():
    sb = open_sandbox("bwrap", LIMITS, workers=2)
    try:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _i: sb.run(KILL, "f", cases()), range(6)))
        assert all(r.infra_error is None for r in results)
        assert sb.recycles == 6
    finally:
        sb.close()
