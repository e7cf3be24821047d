"""The run worker: grades queued runs from the database, round-robin between tokens.

One thread keeps samples in flight in a small thread pool (the candidates run
in the sandbox's isolated workers), as many as the lanes allow
(:mod:`.lanes`): synchronous grades go first, so a worker is kept for them
and no new batch sample starts while they fill the sandbox. Each free slot goes to the
next token in turn that has an unfinished run, and within a token to its
oldest run: a token's 10,000-sample run takes every other slot while another
token has work, never all of them until it is done. A result is written only
where none exists (:meth:`Store.put_result`), so a sample never gets two.

Stopping (shutdown) and cancelling stop new samples from starting; samples in
flight finish and are committed. A run whose token was revoked (``gradebox
token revoke`` from another process, or the admin API) or has expired is
cancelled with that reason (``token revoked``, ``token expired``): the token is
read from the database before each sample starts and at every turn of the loop
(at least once a second), as each request reads it. A sample cut off by a hard kill has no result
and is graded when the run resumes, on the next start.

Each run grades with the layers it was submitted with (stored with the run), and
against the revision each of its tasks had when it was submitted: replacing a
task mid-run changes the cases of runs submitted later only. Its judge uses the
rubric each of those revisions named, as it was when the run was submitted
(:meth:`~gradebox.service.rubricdata.RubricFiles.pin`; rows record
``rubric_revision``, ``0`` for a built-in rubric): replacing a rubric mid-run
changes the judging of later runs only. A
row whose judge was deferred is committed at once (``judge.status: "pending"``)
and replaced when the judge answers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any

from gradebox.service.config import Layers
from gradebox.service.engine.grading import GradingService, Outcome, infra_grade
from gradebox.service.engine.lanes import Lanes
from gradebox.service.engine.rubricdata import RubricFiles
from gradebox.service.engine.validate import sample_from_json
from gradebox.service.store import Store

__all__ = ["RunWorker"]

_log = logging.getLogger("gradebox.service")


class RunWorker:
    """A background thread that grades runs until stopped."""

    def __init__(
        self,
        store: Store,
        grading: Callable[[], GradingService | None],
        lanes: Lanes,
        rubrics: RubricFiles | None = None,
    ) -> None:
        """Grade with ``grading()`` (``None`` until the sandbox is ready), as ``lanes`` allow.

        ``rubrics`` turns a run's pinned rubric into the file its judge loads.
        """
        self._store = store
        self._rubrics = rubrics
        self._grading = grading
        self._lanes = lanes
        self._jobs = lanes.batch_jobs
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._blocked = False
        """Whether the last fill stopped for want of a place (work may be left)."""
        self._news = 0
        """Events that may have made work (a run submitted, a sample done), counted."""
        self._drained_at = -1
        """``_news`` when a look found no sample to start (``-1``: none did yet)."""
        self._thread = threading.Thread(target=self._loop, name="gradebox-runs", daemon=True)
        self._inflight: dict[Future[None], str] = {}
        self._running = 0  # samples submitted and not done (read by the lanes from any thread)
        self._running_lock = threading.Lock()
        self._cursor: dict[str, int] = {}  # run id -> the last sample index handed out
        self._last_owner: str | None = None

    @property
    def inflight(self) -> int:
        """Batch samples being graded now."""
        return len(self._inflight)

    @property
    def running(self) -> int:
        """Batch samples submitted and not done yet (safe to read from any thread)."""
        with self._running_lock:
            return self._running

    def _finished(self, _future: Future[None]) -> None:
        with self._running_lock:
            self._running -= 1
            self._news += 1  # a result that could not be stored is graded again
        self._wake.set()  # settle it (its run may be done)
        self._lanes.freed()  # a gate waiting for a place

    def start(self) -> None:
        """Start the thread; unfinished runs in the database resume at once."""
        self._thread.start()

    def wake(self) -> None:
        """A run was submitted or the sandbox became ready."""
        with self._running_lock:
            self._news += 1  # before the event: the loop's next turn sees it
        self._wake.set()

    def place_freed(self) -> None:
        """A place in the sandbox was freed: wake only if the last fill waited for one.

        A synchronous grade frees a place every few milliseconds under load; with no
        run queued, waking for each costs two queries for nothing. ``_blocked`` is set
        before the fill reads the lanes, so a place freed after that read wakes it;
        it stays unset while the last look found no sample and nothing happened since
        that could have made one (a submitted run, a finished batch sample).
        """
        if self._blocked:
            self._wake.set()

    def stop(self, timeout: float) -> bool:
        """Start no new sample; wait up to ``timeout`` s for those in flight; True if done."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _loop(self) -> None:
        with ThreadPoolExecutor(self._jobs, thread_name_prefix="gradebox-grade") as pool:
            while not self._stop.is_set():
                self._wake.clear()  # before the work: a wake during it is kept
                try:
                    self._settle()
                    self._retire()
                    grading = self._grading()
                    if grading is not None:
                        self._fill(pool, grading)
                except Exception:  # a database error: keep serving, retry later
                    _log.exception("run worker error; unfinished runs resume later")
                    self._stop.wait(1.0)
                self._wake.wait(1.0)
            wait(list(self._inflight))  # samples in flight finish and are committed
            self._settle()

    def _fill(self, pool: ThreadPoolExecutor, grading: GradingService) -> None:
        while not self._stop.is_set():
            with self._running_lock:
                news = self._news
            # Nothing to start since the last look found none: a freed place is no news
            # (synchronous grades filling the sandbox free one every few milliseconds).
            self._blocked = news != self._drained_at
            if not self._lanes.batch_may_start(len(self._inflight)):
                return
            item = self._next()
            if item is None:
                self._blocked = False
                self._drained_at = news
                return
            owner, run_id, idx, obj = item
            with self._running_lock:
                self._running += 1
            future = pool.submit(self._grade_one, grading, owner, run_id, idx, obj)
            self._inflight[future] = run_id
            future.add_done_callback(self._finished)

    def _next(self) -> tuple[str, str, int, dict[str, Any]] | None:
        """The next sample to grade: the next token in turn, its oldest run with work left.

        Runs of a token revoked or expired since the last turn are left out.
        """
        runs = self._store.unfinished()
        self._cursor = {r: i for r, i in self._cursor.items() if any(r == x for _, x in runs)}
        owners = list(dict.fromkeys(owner for owner, _ in runs))
        if self._last_owner in owners:
            turn = owners.index(self._last_owner) + 1
            owners = owners[turn:] + owners[:turn]
        busy = set(self._inflight.values())
        for owner in owners:
            for run_id in (r for o, r in runs if o == owner):
                item = self._store.next_pending(run_id, self._cursor.get(run_id, -1))
                if item is None and run_id not in busy:
                    # Past the end with none in flight: retry what could not be stored.
                    item = self._store.next_pending(run_id, -1)
                    if item is None:
                        self._done(run_id)
                        continue
                if item is None:
                    continue
                if run_id not in self._cursor:
                    self._store.set_status(run_id, "running")
                    _log.info("run %s: grading", run_id)
                self._cursor[run_id] = item[0]
                self._last_owner = owner
                return owner, run_id, item[0], item[1]
        return None

    def _retire(self) -> None:
        """Cancel the unfinished runs of revoked or expired tokens (in flight: they finish)."""
        for run_id, reason in self._store.retire_orphaned():
            self._cursor.pop(run_id, None)
            _log.info("run %s: cancelled (%s)", run_id, reason)

    def _settle(self) -> None:
        """Collect finished samples (their results are already committed)."""
        for future in [f for f in self._inflight if f.done()]:
            run_id = self._inflight.pop(future)
            if future.exception() is not None:
                _log.error("run %s: a result could not be stored; it resumes later", run_id)

    def _done(self, run_id: str) -> None:
        self._cursor.pop(run_id, None)
        if not self._stop.is_set() and self._store.set_status(run_id, "done"):
            _log.info("run %s: done", run_id)

    def _grade_one(
        self, grading: GradingService, owner: str, run_id: str, idx: int, obj: Mapping[str, object]
    ) -> None:
        sample = sample_from_json(obj)
        layers = Layers.from_json(self._store.run_options(run_id))
        revision = self._store.run_revision(run_id, sample.task)  # pinned when submitted
        pin = self._store.run_rubric(run_id, sample.task) if layers.judge != "off" else None
        pinned = None if pin is None else pin.revision
        try:
            rubric = None if pin is None or self._rubrics is None else self._rubrics.pinned(pin)
            outcome = grading.grade(
                sample, layers, lane="batch", revision=revision, owner=owner, rubric=rubric
            )
        except Exception as exc:  # a grader bug must not look like a wrong submission
            grade = infra_grade(sample, f"grader error: {type(exc).__name__}")
            outcome = Outcome(grading.finish(grade, ""))
        stored = replace(outcome.stored, rubric_revision=pinned)
        if self._store.put_result(run_id, idx, stored) and outcome.later is not None:
            outcome.later(
                lambda done: self._store.update_result(
                    run_id, idx, replace(done, rubric_revision=pinned)
                )
            )
