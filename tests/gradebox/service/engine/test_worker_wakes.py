"""The run worker wakes for a freed sandbox place only when it waits for one.

A synchronous grade frees a place every few milliseconds under load; with no run
queued, waking the run worker for each costs it two queries (orphaned runs,
unfinished runs) for nothing. Real SQLite store, real lanes, the worker's own thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from gradebox.service.engine.lanes import Lanes
from gradebox.service.engine.worker import RunWorker
from gradebox.service.store import Store


class CountingStore(Store):
    """The real store; counts the run worker's look for unfinished runs."""

    looks = 0
    looked = threading.Event()

    def unfinished(self, now=None):
        type(self).looks += 1
        self.looked.set()
        return super().unfinished(now)


@contextmanager
def _started(store: Store, lanes: Lanes) -> Iterator[RunWorker]:
    """The run worker on ``store`` and ``lanes``, woken by every freed place, started."""
    worker = RunWorker(store, object, lanes)
    lanes.on_free(worker.place_freed)
    worker.start()
    try:
        yield worker
    finally:
        assert worker.stop(60)
        store.close()


def _settled(worker: RunWorker) -> None:
    """Wait for the worker's first pass to end: its next look is a 1 s tick or a wake."""
    deadline = time.monotonic() + 60
    while worker._blocked and time.monotonic() < deadline:
        time.sleep(0.01)


def _grade_through(lanes: Lanes) -> None:
    with lanes.sync():  # a synchronous grade takes a place and frees it
        pass


def _free_100_times(free: Callable[[], None]) -> float:
    """Free a place 100 times, spread 2 ms apart so each would find the worker waiting.

    Returns the seconds it took: the worker's own 1 s tick may add that many looks.
    """
    t0 = time.monotonic()
    for _ in range(100):
        free()
        time.sleep(0.002)
    return time.monotonic() - t0


def test_sync_grades_do_not_wake_an_idle_run_worker(tmp_path):
    store = CountingStore(tmp_path / "db.sqlite")
    lanes = Lanes(workers=2, reserved=1)
    # No run is queued: the grading service is never asked for (nothing to grade).
    with _started(store, lanes) as worker:
        assert CountingStore.looked.wait(60), "the worker never looked for runs"
        _settled(worker)
        before = CountingStore.looks
        elapsed = _free_100_times(lambda: _grade_through(lanes))
        woken = CountingStore.looks - before
        # Its own 1 s tick only (waking for every free made it ~100).
        assert woken <= elapsed + 2, (woken, elapsed)


def test_a_sync_lane_full_of_grades_does_not_wake_an_idle_run_worker(tmp_path):
    """With the synchronous lane holding every worker no batch sample may start, and
    none is queued either: a place freed (and at once taken again) is no news."""

    class TurnStore(CountingStore):
        looks = 0
        looked = threading.Event()
        turns = 0
        turned = threading.Condition()

        def retire_orphaned(self, now=None):  # once per turn of the worker's loop
            with self.turned:
                type(self).turns += 1
                self.turned.notify_all()
            return super().retire_orphaned(now)

    store = TurnStore(tmp_path / "db.sqlite")
    lanes = Lanes(workers=2, reserved=1)
    with lanes.sync(), _started(store, lanes):  # one worker held throughout
        assert TurnStore.looked.wait(60), "the worker never looked for runs"
        with lanes.sync():  # and now the other: the lane is full
            # A turn of the loop with the lane full (its 1 s tick): a worker that
            # then waits for a place is woken by every free below.
            with TurnStore.turned:
                seen = TurnStore.turns
                assert TurnStore.turned.wait_for(lambda: TurnStore.turns > seen + 1, 60)
            before = TurnStore.turns
            # A grade left the sandbox; the next took its place.
            elapsed = _free_100_times(lanes.freed)
        woken = TurnStore.turns - before
        # Its own 1 s tick only (waking for every free made it ~100).
        assert woken <= elapsed + 2, (woken, elapsed)


def test_a_run_submitted_while_the_lane_is_full_starts_when_a_place_frees(tmp_path):
    """The other side: once a run is submitted (``wake``), the worker waits for a
    place again, so the next place a synchronous grade frees wakes it."""

    class Store3(CountingStore):
        looks = 0
        looked = threading.Event()

    store = Store3(tmp_path / "db.sqlite")
    lanes = Lanes(workers=2, reserved=1)
    with lanes.sync(), _started(store, lanes) as worker:
        assert Store3.looked.wait(60), "the worker never looked for runs"
        _settled(worker)
        with lanes.sync():  # the lane is full: nothing may start
            worker.wake()  # a run was submitted
            deadline = time.monotonic() + 60
            while not worker._blocked and time.monotonic() < deadline:
                time.sleep(0.001)
            assert worker._blocked, "the worker does not wait for a place after a wake"
