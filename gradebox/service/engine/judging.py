"""The judge in the service: the CLI's judge stage, one sample at a time, limited.

The stage (:class:`~gradebox.pipeline.judge.JudgeStage`) is built at the CLI
boundary (``gradebox serve`` reads ``GRADEBOX_JUDGE_*`` there) and handed to
the app; endpoint, model and key never come from a client and are never shown
to one. What the judge sees is what the CLI's stage builds: the public spec,
signature and rubric, and the extracted code; never hidden cases.

``judge: "wait"`` judges in the grading thread before the row is returned;
``"defer"`` returns the row with ``judge.status: "pending"`` and judges in
this module's own threads (``concurrency`` of them, the stage's own request
limit). Both share one limit on judgements in flight, and a waiting ``wait``
judgement takes the next free place before any deferred one (a client is
waiting for it).

Tenants are kept apart (each token's id is its **owner**):

- **Turns.** Deferred judgements are taken round-robin between owners, not in
  arrival order: a token that defers ten thousand judgements delays another
  token's next one by at most one judgement per owner ahead of it, never by
  its whole queue.
- **Shares.** Deferred judgements waiting or running are bounded by
  ``backlog`` in all and by ``per_owner`` for one owner: past either, a
  deferred judgement is settled at once as ``unavailable`` ("the judge's
  backlog is full"). So a client that grades faster than the endpoint answers
  cannot grow the server's memory without bound, nor fill the backlog for
  everyone else.
- **Caches.** Each owner's judgements have their own cache scope
  (:attr:`judge.JudgeItem.cache_scope`): one token is never answered from
  another's cache entries, so ``cache_hit`` (and the time a hit saves) says
  nothing about what another token submitted.
- **Revoked tokens.** A deferred judgement is made only while its owner is
  ``live`` (the service: the token exists and has not expired), asked at its
  turn and again before its answer is stored: a revoked or expired token's
  queued judgements cost no call to the endpoint and their rows are settled as
  ``unavailable`` (:data:`UNWANTED`); one already at the endpoint finishes, and
  its answer is dropped the same way.

**The endpoint's words stay on the server.** An ``unavailable`` judgement the
endpoint caused (an error status, a timeout, no connection) reaches the row with
the fixed reason :data:`UNAVAILABLE` and its ``reason_code``; the endpoint's own
message, which a proxy may fill with anything (the key it was sent, quoted back,
is cut out by the judge: :mod:`judge.redact`), goes to the server log only. The
service's own reasons (a full backlog, a revoked token) are shown as they are.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from gradebox.grade import MAX_TEXT
from gradebox.pipeline.core import Annotation, Graded
from judge import JudgeResult

if TYPE_CHECKING:
    from gradebox.pipeline.judge import JudgeStage

__all__ = ["UNAVAILABLE", "UNWANTED", "JudgeService"]

UNAVAILABLE = "the judge endpoint gave no usable answer; the server's log has the detail"
"""The ``reason`` a client reads of an ``unavailable`` judgement the endpoint caused: the
endpoint's own text (redacted of the key by the judge) goes to the log, never to a row."""
UNWANTED = "the token that asked for it was revoked or expired; the judgement was not made"
"""The reason of a deferred judgement whose owner stopped being live."""
_BACKLOG_FULL = "the judge's backlog is full; the judgement was not made"

_log = logging.getLogger("gradebox.service")


class JudgeService:
    """One judge stage with a limit on judgements in flight; thread-safe."""

    def __init__(
        self,
        stage: JudgeStage,
        *,
        concurrency: int | None = None,
        backlog: int = 10_000,
        per_owner: int | None = None,
        live: Callable[[str], bool] | None = None,
    ) -> None:
        """Judge with ``stage`` (the caller closes it), ``concurrency`` at once.

        At most ``backlog`` deferred judgements wait or run at once, and at most
        ``per_owner`` of one owner (default: a quarter of ``backlog``, at least 1).
        A deferred judgement of a named owner is made only while ``live(owner)``
        (default: always).
        """
        self.stage = stage
        self._live = live
        width = concurrency or (stage.config.concurrency if stage.config else 4)
        self._slots = _Slots(width)
        share = max(1, backlog // 4) if per_owner is None else per_owner
        self._queue = _Turns(total=max(1, backlog), per_owner=max(1, share))
        self._closed = threading.Event()
        self._threads = [
            threading.Thread(target=self._serve, name=f"gradebox-judge-later-{i}", daemon=True)
            for i in range(width)
        ]
        for thread in self._threads:
            thread.start()

    def upfront(self, graded: Graded) -> Annotation | None:
        """The annotation when the judge is not asked (no code, no spec), else ``None``."""
        planned = self.stage.item(graded)
        return Annotation(planned) if isinstance(planned, JudgeResult) else None

    def annotate(self, graded: Graded, *, owner: str = "") -> Annotation:
        """Judge one sample now (first in line for a place), as the CLI's stage does."""
        with self._slots.held(first=True):
            return self._judge(graded, owner)

    def later(self, graded: Graded, done: Callable[[Annotation], Any], *, owner: str = "") -> bool:
        """Judge ``graded`` in the background, in ``owner``'s turn; ``done(annotation)`` stores it.

        Returns:
            Whether it was queued. With the backlog (or ``owner``'s share of it)
            full, or the service closing, ``done`` gets ``unavailable`` at once.
        """
        if self._closed.is_set() or not self._queue.put(owner, (graded, done)):
            _log.warning("the judge's backlog is full: a deferred judgement is unavailable")
            self._store(done, self.stage.crashed([graded], _BACKLOG_FULL)[0])
            return False
        return True

    def queued(self, owner: str) -> int:
        """Deferred judgements of ``owner`` waiting or running."""
        return self._queue.held(owner)

    def _judge(self, graded: Graded, owner: str) -> Annotation:
        try:
            note = self.stage.run([graded], scope=owner)[0]
        except Exception as exc:  # as the pipeline does: unavailable, never a verdict
            message = f"judge stage error: {type(exc).__name__}"
            return self.stage.crashed([graded], message)[0]
        return _public(note, graded.sample_id)

    def _serve(self) -> None:
        """One deferred-judgement thread: the next owner's turn, until closed."""
        while (taken := self._queue.take()) is not None:
            owner, (graded, done) = taken
            note = None
            try:
                if self._wanted(owner):
                    with self._slots.held(first=False):
                        note = self._judge(graded, owner)
            finally:
                self._queue.finished(owner)
            if self._closed.is_set():  # the store is closing: the next start settles the row
                continue
            if note is None or not self._wanted(owner):
                note = self.stage.crashed([graded], UNWANTED)[0]
            self._store(done, note)

    def _wanted(self, owner: str) -> bool:
        """Whether ``owner``'s deferred judgement is still to be made (its token is live)."""
        if self._live is None or not owner:
            return True
        try:
            return self._live(owner)
        except Exception:  # a database error: judge, as without the check
            _log.exception("could not tell whether a deferred judgement's token is live")
            return True

    @staticmethod
    def _store(done: Callable[[Annotation], Any], note: Annotation) -> None:
        try:
            done(note)
        except Exception:  # a database error: the row stays pending
            _log.exception("a deferred judgement could not be stored")

    def close(self, *, wait: bool = True) -> None:
        """Stop taking deferred judgements; finish (``wait``) or drop those queued.

        Judgements still running when ``wait`` is false store nothing: their rows stay
        ``pending`` and the next start marks them ``unavailable``.
        """
        if not wait:
            self._closed.set()
        self._queue.close(drop=not wait)
        if wait:
            for thread in self._threads:
                thread.join()
        self._closed.set()


def _public(note: Annotation, sample_id: str) -> Annotation:
    """``note`` with an ``unavailable`` reason replaced by :data:`UNAVAILABLE`.

    The real reason (the endpoint's words, already redacted of the key) goes to the
    log, cut to :data:`~gradebox.grade.MAX_TEXT` printable characters.
    """
    result = note.value
    if not isinstance(result, JudgeResult) or result.status != "unavailable":
        return note
    if result.reason:
        text = "".join(c if c.isprintable() else "?" for c in result.reason[:MAX_TEXT])
        _log.warning(
            "judge: sample %.80r: unavailable (%s): %s", sample_id, result.reason_code, text
        )
    return Annotation(dataclasses.replace(result, reason=UNAVAILABLE))


_Job = tuple[Graded, Callable[[Annotation], Any]]


class _Slots:
    """At most ``width`` judgements in flight; one asked ``first`` goes before the others."""

    def __init__(self, width: int) -> None:
        self._free = max(1, width)
        self._first_waiting = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def held(self, *, first: bool) -> Iterator[None]:
        with self._cond:
            self._first_waiting += first
            try:
                while self._free == 0 or (not first and self._first_waiting):
                    self._cond.wait()
            finally:
                self._first_waiting -= first
            self._free -= 1
        try:
            yield
        finally:
            with self._cond:
                self._free += 1
                self._cond.notify_all()


class _Turns:
    """Deferred judgements per owner, taken round-robin; bounded in all and per owner."""

    def __init__(self, *, total: int, per_owner: int) -> None:
        self._total, self._per_owner = total, per_owner
        self._waiting: OrderedDict[str, deque[_Job]] = OrderedDict()
        """Owners with waiting judgements, in turn order (the next at the front)."""
        self._held: Counter[str] = Counter()
        """Waiting or running judgements per owner."""
        self._closing = False
        self._cond = threading.Condition()

    def put(self, owner: str, job: _Job) -> bool:
        with self._cond:
            if (
                self._closing
                or self._held.total() >= self._total
                or self._held[owner] >= self._per_owner
            ):
                return False
            self._held[owner] += 1
            self._waiting.setdefault(owner, deque()).append(job)
            self._cond.notify()
            return True

    def take(self) -> tuple[str, _Job] | None:
        """The next owner's oldest judgement (blocks); ``None`` once closed and empty."""
        with self._cond:
            while not self._waiting:
                if self._closing:
                    return None
                self._cond.wait()
            owner, jobs = next(iter(self._waiting.items()))
            job = jobs.popleft()
            if jobs:
                self._waiting.move_to_end(owner)  # the others go first next time
            else:
                del self._waiting[owner]
            return owner, job

    def finished(self, owner: str) -> None:
        with self._cond:
            self._held[owner] -= 1
            if self._held[owner] <= 0:
                del self._held[owner]

    def held(self, owner: str) -> int:
        with self._cond:
            return self._held[owner]

    def close(self, *, drop: bool) -> None:
        """No more judgements; with ``drop``, forget those still waiting (rows stay pending)."""
        with self._cond:
            self._closing = True
            if drop:
                for owner, jobs in self._waiting.items():
                    self._held[owner] -= len(jobs)
                self._waiting.clear()
            self._cond.notify_all()
