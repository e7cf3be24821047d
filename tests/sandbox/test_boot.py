"""Starting a sandbox: only the workers asked for boot; the rest start on use or on ``start``."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from waiting import live_children, wait_until

from sandbox.runner import open_sandbox
from sandbox.types import make_case
from sandbox.worker import Worker

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


def test_closing_while_a_worker_starts_leaves_no_worker_process(
    isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker being started in the background reads its zygote's hello; here that read
    # is held until the process is gone (as a busy machine holds a start for seconds), so
    # close() surely comes while the worker starts. Before, close() returned with that
    # worker's process alive: it ran on until its start ended (an eval's end saw it).
    base = live_children()
    real = Worker._read_frame

    def held_hello(self: Worker, deadline: float) -> dict[str, object]:
        if threading.current_thread().name == "sandbox-boot":
            wait_until(lambda: self._proc.poll() is not None, what="the starting worker to end")
        return real(self, deadline)

    sb = open_sandbox(isolation, workers=2, boot=1)
    try:
        monkeypatch.setattr(Worker, "_read_frame", held_hello)
        sb.start(1)
        wait_until(lambda: len(live_children() - base) >= 2, what="the second worker to fork")
    finally:
        sb.close()
    left = live_children() - base
    for pid in left:  # (the old close: do not leave them to the rest of the suite)
        os.killpg(pid, signal.SIGKILL)
    assert not left, f"worker processes alive after close(): {left}"
