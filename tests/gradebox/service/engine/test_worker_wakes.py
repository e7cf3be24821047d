"""The run worker wakes for a freed sandbox place only when it waits for one.

A synchronous grade frees a place every few milliseconds under load; with no run
queued, waking the run worker for each costs it two queries (orphaned runs,
unfinished runs) for nothing. Real SQLite store, real lanes, the worker's own thread.
"""

from __future__ import annotations

import threading
import time

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


def test_sync_grades_do_not_wake_an_idle_run_worker(tmp_path):
    store = CountingStore(tmp_path / "db.sqlite")
    lanes = Lanes(workers=2, reserved=1)
    # No run is queued: the grading service is never asked for (nothing to grade).
    worker = RunWorker(store, object, lanes)
    lanes.on_free(worker.place_freed)
    worker.start()
    try:
        assert CountingStore.looked.wait(60), "the worker never looked for runs"
        # Let its first pass finish: its next look is a 1 s tick or a wake.
        deadline = time.monotonic() + 60
        while worker._blocked and time.monotonic() < deadline:
            time.sleep(0.01)
        before, t0 = CountingStore.looks, time.monotonic()
        for _ in range(100):
            with lanes.sync():
                pass
            time.sleep(0.002)  # spread the frees: each would find the worker waiting
        elapsed = time.monotonic() - t0
        woken = CountingStore.looks - before
        # Its own 1 s tick only (waking for every free made it ~100).
        assert woken <= elapsed + 2, (woken, elapsed)
    finally:
        assert worker.stop(60)
        store.close()
