"""Starting a sandbox: only the workers asked for boot; the rest start on use or on ``start``."""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from sandbox.runner import open_sandbox
from sandbox.types import make_case

ADD = "def add(a, b):\n    return a + b\n"


@pytest.fixture(params=["bwrap", "none"])
def isolation(request: pytest.FixtureRequest) -> str:
    if request.param == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    return str(request.param)


def _add(sb, a: int) -> object:
    return sb.run(ADD, "add", [make_case("add", a, 1)]).observations[0].value


def test_a_sandbox_of_two_slots_booted_with_one_grades_on_that_one(isolation: str) -> None:
    # The self-check and the candidate both take the running worker: the unstarted slot
    # is not started while a worker waits (a one-candidate run boots one worker).
    with open_sandbox(isolation, workers=2, boot=1) as sb:
        assert sb.running == 1
        assert [_add(sb, a) for a in range(3)] == [1, 2, 3]
        assert sb.running == 1


def test_start_boots_the_other_slots_in_the_background(isolation: str) -> None:
    with open_sandbox(isolation, workers=3, boot=1) as sb:
        sb.start(1)
        deadline = time.monotonic() + 60  # a generous deadline: the machine may be busy
        while sb.running < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sb.running == 2  # one more, not every slot
        with ThreadPoolExecutor(max_workers=3) as pool:  # the third slot starts on use
            assert list(pool.map(lambda a: _add(sb, a), range(6))) == [1, 2, 3, 4, 5, 6]
        assert 2 <= sb.running <= 3


def test_by_default_every_slot_boots(isolation: str) -> None:
    with open_sandbox(isolation, workers=2) as sb:
        deadline = time.monotonic() + 60
        while sb.running < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sb.running == 2
