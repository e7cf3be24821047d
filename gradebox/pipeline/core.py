"""The stages after the sandbox, scheduled in chunks; rows still come out in input order.

A sample is first graded through the executor seam (extract, gate, hidden cases:
:meth:`gradebox.pipeline.tests.Grader.grade_tests`), which gives a :class:`Graded`: the
typed tests report and what a later stage may see (the extracted code, the
original file, the public task; never the reply's prose or the hidden cases).
Later stages (static layers, judge) each implement :class:`Stage` and annotate
many samples per call.

:func:`stream` submits samples to the executor, at most :data:`WINDOW_CHUNKS`
chunks ahead of the last grade out (so a run of any size holds a bounded
number of samples in flight), groups samples in chunks of :data:`CHUNK` in
input order and, as soon as a chunk is graded, hands it to each stage. Each
stage runs in a single thread of its own (it parallelises internally: the
static tools use ``jobs`` cores, the judge its own request limit), so stages
overlap each other and the sandbox work on later chunks. When a stage is still
busy as more chunks finish, up to :data:`MAX_MERGE` waiting chunks go into its
next call (bigger batches amortise tool start-up). A sample's
:class:`~gradebox.grade.Grade` is built (:func:`finish`) when every stage has
annotated it; grades are yielded in input order as soon as every earlier one
is final.

Without stages a grade is final as soon as its sample is graded: no chunking,
no extra thread.
"""

from __future__ import annotations

import queue
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from gradebox.grade import Grade, StaticReport, TestsReport
from gradebox.verdict import Verdict, decide
from sandbox.types import PublicTask

if TYPE_CHECKING:  # the judge package loads its client; a run without a judge never needs it
    from judge import JudgeResult

__all__ = [
    "CHUNK",
    "MAX_MERGE",
    "WINDOW_CHUNKS",
    "Annotation",
    "Graded",
    "Stage",
    "finish",
    "least_chunks",
    "stream",
]

CHUNK = 64
"""Samples per chunk handed to the stages."""
MAX_MERGE = 8
"""Most waiting chunks a busy stage takes in one call when it is free again."""
WINDOW_CHUNKS = 2 * MAX_MERGE + 2
"""Chunks in flight at most (submitted, not yet yielded): room for a busy stage to merge."""


@dataclass(frozen=True, slots=True)
class Graded:
    """A sample after extract, gate and sandbox; what later stages may look at."""

    sample_id: str
    """The sample's id."""
    fn: str
    """The entry point of the task it answers."""
    code: str | None
    """The extracted code; ``None`` when extraction failed (no stage checks it)."""
    original: str | None
    """The file the sample was asked to change, if it carries one."""
    public: PublicTask | None
    """The public task (spec, signature, rubric); never the hidden cases."""
    tests: TestsReport
    """What extract, gate and the hidden cases found."""
    fixed: Verdict | None = None
    """The verdict when it is already settled (the sample could not be graded)."""
    task: str = ""
    """The id of the task it answers; left empty, it is ``fn``."""

    def __post_init__(self) -> None:
        """Fill in the task id of a sample that names none: its entry point."""
        if not self.task:
            object.__setattr__(self, "task", self.fn)


@dataclass(frozen=True, slots=True)
class Annotation:
    """One stage's typed result for one sample (``None``: nothing to look at)."""

    value: StaticReport | JudgeResult | None


class Stage(Protocol):
    """A stage after the sandbox: annotates a batch of graded samples.

    A stage may also have a ``min_batch`` attribute: the samples it waits for
    before a call (in whole chunks), except at the end of a run, when each call
    costs a fixed price worth amortising (the static tools' requests).
    """

    @property
    def field(self) -> str:
        """The row field this stage fills (``"static"``, ``"judge"``)."""
        ...

    def run(self, items: Sequence[Graded]) -> list[Annotation]:
        """Annotate ``items``; one annotation each, in order."""
        ...

    def crashed(self, items: Sequence[Graded], message: str) -> list[Annotation]:
        """Annotations for ``items`` when :meth:`run` raised (an infrastructure error)."""
        ...


def finish(graded: Graded, notes: Mapping[str, Annotation]) -> Grade:
    """Build the sample's :class:`~gradebox.grade.Grade`: every layer's part and the verdict.

    Args:
        graded: The sample after the sandbox.
        notes: Annotation per row field (``"static"``, ``"judge"``).

    Returns:
        The record; its verdict comes from :func:`gradebox.verdict.decide` alone.
    """
    found = [note.value for note in notes.values() if note.value is not None]
    static = next((v for v in found if isinstance(v, StaticReport)), None)
    judge = next((v for v in found if not isinstance(v, StaticReport)), None)
    verdict = graded.fixed or decide(graded.tests, static, judge)
    return Grade(graded.sample_id, graded.fn, verdict, graded.tests, static, judge, graded.task)


_Event = tuple[int, int, Future[Any]]
"""(``-1``, sample index, future) for a sample; (stage number, call number, future) for a stage."""


def stream(
    submit: Callable[[int], Future[Graded]],
    count: int,
    fallback: Callable[[int, Exception], Graded],
    *,
    stages: Sequence[Stage] = (),
    on_row: Callable[[int, Grade], None] | None = None,
    chunk: int = CHUNK,
    window: int | None = None,
) -> Iterator[Grade]:
    """Grade ``count`` samples and run the stages over them; yield grades in input order.

    Args:
        submit: Submits sample ``i`` to the grading executor.
        count: How many samples.
        fallback: The graded result of sample ``i`` whose grading raised.
        stages: The stages after the sandbox, each in a thread of its own.
        on_row: Called with ``(index, grade)`` as each grade becomes final.
        chunk: Samples per chunk handed to the stages.
        window: Most samples submitted but not yet yielded (default
            :data:`WINDOW_CHUNKS` chunks): sample ``i`` is submitted once grade
            ``i - window`` is out.

    Yields:
        Final grades, in input order, each as soon as every earlier one is final.
    """
    events: queue.SimpleQueue[_Event] = queue.SimpleQueue()
    run = _Run(count, fallback, stages, events, on_row, max(1, chunk))
    # Room for the chunk of the next grade out and the batch its stages wait for.
    least = max((least_chunks(stage, chunk) for stage in stages), default=0)
    ahead = max((least + 1) * chunk, window if window is not None else chunk * WINDOW_CHUNKS)
    submitted = 0
    try:
        while run.next < count:
            # Only so many samples between the last row out and the last one submitted:
            # memory stays flat however many samples a run has.
            while submitted < count and submitted - run.next < ahead:
                submit(submitted).add_done_callback(partial(_post, events, -1, submitted))
                submitted += 1
            run.handle(events.get())
            yield from run.ready()
    finally:
        run.close()


def least_chunks(stage: Stage, chunk: int) -> int:
    """The chunks a stage waits for before a call: its optional ``min_batch`` samples."""
    wanted = getattr(stage, "min_batch", 1)
    return max(1, -(-int(wanted) // max(1, chunk)))


def _post(events: queue.SimpleQueue[_Event], kind: int, key: int, future: Future[Any]) -> None:
    events.put((kind, key, future))


class _Run:
    """The scheduler's state: graded samples, chunk and stage bookkeeping, final rows."""

    def __init__(
        self,
        count: int,
        fallback: Callable[[int, Exception], Graded],
        stages: Sequence[Stage],
        events: queue.SimpleQueue[_Event],
        on_row: Callable[[int, Grade], None] | None,
        chunk: int,
    ) -> None:
        self.count, self.fallback, self.stages = count, fallback, list(stages)
        self.events, self.on_row, self.chunk = events, on_row, chunk
        self.next = 0
        self.final: dict[int, Grade] = {}
        self.graded: dict[int, Graded] = {}
        self.notes: dict[int, dict[str, Annotation]] = {}
        chunks = (count + chunk - 1) // chunk
        self.missing = [min(chunk, count - c * chunk) for c in range(chunks)]
        self.waiting = [len(self.stages)] * chunks
        self.backlog: list[deque[int]] = [deque() for _ in self.stages]
        self.calls: dict[tuple[int, int], list[int]] = {}
        self.busy = [False] * len(self.stages)
        self.least = [least_chunks(stage, chunk) for stage in self.stages]
        self.chunks_graded = 0
        self.serial = 0
        self.pools = [
            ThreadPoolExecutor(1, thread_name_prefix=f"gradebox-{s.field}") for s in self.stages
        ]

    def handle(self, event: _Event) -> None:
        kind, key, future = event
        if kind < 0:
            self._graded(key, future)
        else:
            self._annotated(kind, key, future)

    def ready(self) -> Iterator[Grade]:
        while self.next in self.final:
            yield self.final.pop(self.next)
            self.next += 1

    def close(self) -> None:
        for pool in self.pools:
            pool.shutdown(wait=False, cancel_futures=True)

    def _graded(self, i: int, future: Future[Graded]) -> None:
        try:
            graded = future.result()
        except Exception as exc:
            graded = self.fallback(i, exc)
        if not self.stages:
            self._final(i, finish(graded, {}))
            return
        self.graded[i] = graded
        c = i // self.chunk
        self.missing[c] -= 1
        if self.missing[c] == 0:
            self.chunks_graded += 1
            for s in range(len(self.stages)):
                self.backlog[s].append(c)
                self._pump(s)

    def _pump(self, s: int) -> None:
        if self.busy[s] or not self.backlog[s]:
            return
        if len(self.backlog[s]) < self.least[s] and self.chunks_graded < len(self.missing):
            return  # wait for a batch worth its fixed cost, unless no more chunks will come
        take = min(MAX_MERGE, len(self.backlog[s]))
        chunks = [self.backlog[s].popleft() for _ in range(take)]
        items = [self.graded[i] for c in chunks for i in self._indices(c)]
        self.serial += 1
        self.calls[(s, self.serial)] = chunks
        self.busy[s] = True
        future = self.pools[s].submit(self.stages[s].run, items)
        future.add_done_callback(partial(_post, self.events, s, self.serial))

    def _annotated(self, s: int, serial: int, future: Future[list[Annotation]]) -> None:
        stage, chunks = self.stages[s], self.calls.pop((s, serial))
        indices = [i for c in chunks for i in self._indices(c)]
        items = [self.graded[i] for i in indices]
        try:
            notes = future.result()
            if len(notes) != len(items):
                raise RuntimeError(f"{len(notes)} annotations for {len(items)} samples")
        except Exception as exc:
            notes = stage.crashed(items, f"{stage.field} stage error: {type(exc).__name__}: {exc}")
        for i, note in zip(indices, notes, strict=True):
            self.notes.setdefault(i, {})[stage.field] = note
        self.busy[s] = False
        self._pump(s)
        for c in chunks:
            self.waiting[c] -= 1
            if self.waiting[c] == 0:
                for i in self._indices(c):
                    self._final(i, finish(self.graded.pop(i), self.notes.pop(i, {})))

    def _indices(self, c: int) -> range:
        return range(c * self.chunk, min((c + 1) * self.chunk, self.count))

    def _final(self, i: int, grade: Grade) -> None:
        self.final[i] = grade
        if self.on_row is not None:
            self.on_row(i, grade)
