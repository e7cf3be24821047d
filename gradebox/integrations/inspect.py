"""gradebox in inspect_ai: a dataset, a scorer, a pass@k reducer and a task.

Install with ``pip install 'gradebox[inspect]'``. gradebox registers itself as an
inspect extension (the ``inspect_ai`` entry point), so ``inspect eval`` finds
these by name: ``gradebox/taskset`` (a whole eval of a task set),
``gradebox/gradebox_scorer`` and ``gradebox/pass_at``::

    from inspect_ai import Epochs, Task, task
    from inspect_ai.solver import generate
    from gradebox.integrations.inspect import gradebox_dataset, gradebox_scorer, pass_at

    @task
    def humaneval() -> Task:
        return Task(
            dataset=gradebox_dataset("tasks/humaneval"),
            solver=generate(),
            scorer=gradebox_scorer("tasks/humaneval"),
            epochs=Epochs(5, [pass_at(1), pass_at(5)]),
        )

**Samples** (:func:`gradebox_dataset`): one per task of the task set's
``public.jsonl``, its input the prompt ``gradebox sample`` sends
(:data:`gradebox.sampling.DEFAULT_TEMPLATE`, or ``prompt_template`` with the same
placeholders), its ``id`` the task id and its metadata the task id (``task``) and
entry point (``fn``). The hidden cases are never read for a sample.

**Scores** (:func:`gradebox_scorer`): ``state.output.completion`` is graded as a
``reply`` by gradebox's own pipeline (extract, gate, the hidden cases in the
sandbox, the static layers, the judge, the verdict), the parts ``gradebox grade``
uses. ``Score.value`` is :data:`CORRECT` (``"C"``) for the verdict ``pass``,
:data:`INCORRECT` (``"I"``) for ``fail`` and :data:`NEEDS_REVIEW` (``"R"``) for
``needs_review`` (an infrastructure error, a static tool failure, a judge that
disagrees or broke protocol: not a pass, not the candidate's failure either).
The scorer's metrics, and :func:`pass_at`, count ``R`` as not passed, as
``gradebox passk`` does. ``Score.metadata`` is the sample's ``results.jsonl``
row, shown as the scorer's ``disclosure`` allows (``cases``, as ``gradebox
grade`` writes it, by default); ``Score.explanation`` a one-line summary of it;
``Score.answer`` the extracted code. A row's ``id`` is ``<task id>#<epoch - 1>``,
as ``gradebox sample`` names completions, so the rows of an eval log are a
``results.jsonl`` that ``gradebox passk`` reads.

**Workers**: the sandbox's workers (and the static tools' warm workers) start on
the first score of an eval, are shared by every sample and epoch, and stop when
the eval's run ends (an inspect hook). Candidates run isolated on the machine
running inspect, as in ``gradebox grade``; at most ``jobs`` at once.

**pass@k** (:func:`pass_at`): an epoch reducer with gradebox's unbiased estimator
(:func:`gradebox.runs.passk.pass_at_k`); the scorer's ``accuracy`` over the
reduced scores is the mean over tasks that ``gradebox passk`` prints.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, get_args

import anyio
from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import Dataset, MemoryDataset
from inspect_ai.dataset import Sample as InspectSample
from inspect_ai.hooks import Hooks, RunEnd, hooks
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Scorer,
    ScoreReducer,
    Target,
    accuracy,
    score_reducer,
    scorer,
    stderr,
    value_to_float,
)
from inspect_ai.solver import TaskState, generate

from gradebox.errors import BadInput, GradeboxError
from gradebox.grade import Grade
from gradebox.integrations.engine import Engine, EngineOptions, open_engine
from gradebox.integrations.taskset import read_public, read_tasks, task_names, task_set
from gradebox.model import Sample
from gradebox.model import Task as GradeboxTask
from gradebox.pipeline.core import Annotation, Graded, Stage, finish
from gradebox.runs.passk import parse_ks, pass_at_k
from gradebox.verdict import VerdictName
from sandbox.backends import BACKENDS
from sandbox.types import PublicTask

__all__ = [
    "CORRECT",
    "INCORRECT",
    "NEEDS_REVIEW",
    "VALUES",
    "Disclosure",
    "explanation",
    "gradebox_dataset",
    "gradebox_scorer",
    "pass_at",
    "shown_row",
    "taskset",
]

NEEDS_REVIEW = "R"
"""``Score.value`` of a sample whose verdict is ``needs_review``."""
VALUES: dict[VerdictName, str] = {"pass": CORRECT, "fail": INCORRECT, "needs_review": NEEDS_REVIEW}
"""``Score.value`` by gradebox verdict."""
Disclosure = Literal["cases", "counts", "verdict"]
"""What ``Score.metadata`` shows of the hidden cases: per-case outcomes by index
(``cases``, as ``gradebox grade`` writes rows), how many passed (``counts``), or the
verdict alone (``verdict``); as the service shows a task's rows to a grader token."""
_TO_FLOAT = value_to_float(noanswer=NEEDS_REVIEW)  # C 1, I 0, R 0: R is not a pass


def gradebox_dataset(tasks: str | Path, *, prompt_template: str | None = None) -> Dataset:
    """One sample per task of a gradebox task set, asking for its function.

    Args:
        tasks: The task set: a directory with ``public.jsonl`` (as ``gradebox import``
            writes it), or its ``public.jsonl``. Only the public file is read.
        prompt_template: ``string.Template`` text with ``$fn``, ``$task``, ``$spec``,
            ``$signature`` and ``$examples`` (default: ``gradebox sample``'s prompt).

    Returns:
        The samples in file order: input the prompt, ``id`` the task id, metadata
        ``{"task": <task id>, "fn": <entry point>}``.

    Raises:
        BadInput: No task set there, a bad line, or a bad template.
    """
    # Loads openai (~1 s): on use, not whenever inspect starts (it loads every extension).
    from gradebox.sampling.prompt import DEFAULT_TEMPLATE, check_template, render  # noqa: PLC0415

    files = task_set(tasks)
    template = check_template(prompt_template or DEFAULT_TEMPLATE, where="prompt_template")
    samples = [_sample(public, render(template, public)) for public in read_public(files)]
    return MemoryDataset(samples, name=files.public.parent.name, location=str(files.public))


def _sample(public: PublicTask, prompt: str) -> InspectSample:
    names = task_names(public)
    return InspectSample(input=prompt, id=names.id, metadata={"task": names.id, "fn": names.entry})


@scorer(metrics=[accuracy(to_float=_TO_FLOAT), stderr(to_float=_TO_FLOAT)])
def gradebox_scorer(
    tasks: str | Path,
    *,
    static: bool = True,
    judge: Literal["off", "wait"] = "off",
    isolation: str = "bwrap",
    jobs: int | None = None,
    disclosure: Disclosure = "cases",
) -> Scorer:
    """Grade each completion with gradebox's pipeline against the task set's hidden cases.

    The task set is read and checked now (a bad file fails before the eval runs);
    the sandbox's workers start on the first score and stop when the eval ends.
    The judge reads ``GRADEBOX_JUDGE_*`` (or ``OPENAI_*``) from the environment.

    Args:
        tasks: The task set (a directory with ``public.jsonl`` and ``hidden.jsonl``).
        static: Run the static layers (ruff, mypy, bandit, imports, metrics).
        judge: ``wait``: the LLM judge annotates each sample before it is scored;
            ``off``: no judge (the row's ``judge`` is ``null``).
        isolation: The sandbox backend: ``bwrap`` (``auto`` is the same), or ``none``
            (no isolation: trusted code only).
        jobs: Candidates run at once (default: this machine's CPU count).
        disclosure: What ``Score.metadata`` shows of the hidden cases (:data:`Disclosure`).

    Returns:
        The scorer; values ``C``, ``I`` or ``R`` (see the module docstring).

    Raises:
        BadInput: No task set there, bad lines, or an unknown ``judge``, ``isolation``
            or ``disclosure``.
    """
    _check_word(judge, ("off", "wait"), "judge")
    _check_word(disclosure, get_args(Disclosure), "disclosure")
    _check_word(isolation, ("auto", *BACKENDS), "isolation")
    options = EngineOptions(
        static=static, judge=judge, isolation=isolation, jobs=max(1, jobs or os.cpu_count() or 1)
    )
    pool = _Pool(read_tasks(task_set(tasks)), options, dict(os.environ), disclosure)

    async def score(state: TaskState, target: Target) -> Score:
        return await pool.score(state)

    return score


@score_reducer(name="pass_at")
def pass_at(k: int) -> ScoreReducer:
    """pass@k over a sample's epochs: gradebox's unbiased estimator, as ``gradebox passk``.

    With ``n`` epochs of which ``c`` scored ``C``, the value is
    :func:`gradebox.runs.passk.pass_at_k` ``(n, c, k)``; ``I`` and ``R`` are not passes.
    Where ``k > n`` (inspect refuses ``k`` above the epochs; a sample whose epochs
    errored has fewer scores) it is undefined: the score is unscored (NaN) and left
    out of the metrics, as ``gradebox passk`` leaves such tasks out of its mean.

    Args:
        k: Samples drawn (>= 1).
    """
    if k < 1:
        raise ValueError(f"pass_at needs k >= 1, got {k}")

    def reduce(scores: list[Score]) -> Score:
        n = len(scores)
        c = sum(1 for s in scores if s.value == CORRECT)
        value = pass_at_k(n, c, k)
        explanation = f"{c} of {n} epochs passed"
        metadata: dict[str, Any] = {"n": n, "c": c, "k": k}
        if value is None:
            return Score.unscored(explanation=f"{explanation}; k > n", metadata=metadata)
        return Score(value=value, explanation=explanation, metadata=metadata)

    return reduce


@task
def taskset(
    tasks: str,
    epochs: int = 1,
    k: str = "1",
    static: bool = True,
    judge: str = "off",
    isolation: str = "bwrap",
    jobs: int | None = None,
    prompt_template: str | None = None,
) -> Task:
    """A gradebox task set as an inspect task: generate, then grade (``gradebox/taskset``).

    ``inspect eval gradebox/taskset -T tasks=tasks/humaneval -T epochs=5 -T k=1,5``.

    Args:
        tasks: The task set directory.
        epochs: Completions per task.
        k: Comma-separated k values for pass@k (those ``<= epochs``; with one epoch
            the scores are not reduced).
        static: Run the static layers.
        judge: ``off`` or ``wait``.
        isolation: The sandbox backend.
        jobs: Candidates run at once (default: the CPU count).
        prompt_template: See :func:`gradebox_dataset`.
    """
    _check_word(judge, ("off", "wait"), "judge")
    ks = [n for n in parse_ks(k) if n <= epochs]
    return Task(
        dataset=gradebox_dataset(tasks, prompt_template=prompt_template),
        solver=generate(),
        scorer=gradebox_scorer(
            tasks,
            static=static,
            judge=cast(Literal["off", "wait"], judge),
            isolation=isolation,
            jobs=jobs,
        ),
        epochs=Epochs(epochs, [pass_at(n) for n in ks]) if epochs > 1 else None,
    )


def _check_word(value: str, allowed: Sequence[str], what: str) -> None:
    if value not in allowed:
        raise BadInput([f"{what}: {value!r} is not one of {', '.join(allowed)}"])


class _Pool:
    """A scorer's engine: opened on the eval's first score, closed when its run ends."""

    def __init__(
        self,
        tasks: dict[str, GradeboxTask],
        options: EngineOptions,
        environ: dict[str, str],
        disclosure: Disclosure,
    ) -> None:
        self.tasks, self.options, self.environ = tasks, options, environ
        self.disclosure: Disclosure = disclosure
        self._lock = threading.Lock()
        self._session: _Session | None = None
        self._failure: GradeboxError | None = None  # a refused sandbox: once per eval

    async def score(self, state: TaskState) -> Score:
        session = self._session
        if session is None:
            session = await anyio.to_thread.run_sync(self._open)
        return await session.score(state)

    def _open(self) -> _Session:
        with self._lock:  # the first score of an eval opens it; the others wait here
            if self._failure is not None:
                raise self._failure
            session = self._session
            if session is None:
                _LIVE.add(self)  # the run's end closes it, or forgets its failure
                try:
                    engine = open_engine(self.tasks, self.options, self.environ)
                except GradeboxError as exc:
                    self._failure = exc
                    raise
                session = self._session = _Session(engine, self.options.jobs, self.disclosure)
            return session

    def close(self) -> None:
        with self._lock:
            session, self._session, self._failure = self._session, None, None
            _LIVE.discard(self)
        if session is not None:
            session.close()


@dataclass
class _Slot:
    """One sample waiting for a stage's annotation."""

    graded: Graded
    note: Annotation | None = None


@dataclass
class _Batcher:
    """One stage, one call at a time; samples that arrive meanwhile go into the next call.

    The static tools cost a fixed price per call: samples scored at once share it,
    as chunks do in ``gradebox grade``.
    """

    engine: Engine
    stage: Stage
    waiting: list[_Slot] = field(default_factory=list)
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def annotate(self, graded: Graded, into: dict[str, Annotation]) -> None:
        slot = _Slot(graded)
        self.waiting.append(slot)
        async with self.lock:
            if slot.note is None:  # no earlier call took it: this call takes all that wait
                batch = [slot, *(s for s in self.waiting if s is not slot)]
                self.waiting = []
                items = [s.graded for s in batch]
                notes = await anyio.to_thread.run_sync(self.engine.annotate, self.stage, items)
                for s, note in zip(batch, notes, strict=True):
                    s.note = note
        if slot.note is not None:  # always, once a call took the slot
            into[self.stage.field] = slot.note


class _Session:
    """An open engine and what the event loop needs to feed it (made on first use)."""

    def __init__(self, engine: Engine, jobs: int, disclosure: Disclosure) -> None:
        self.engine, self.jobs, self.disclosure = engine, jobs, disclosure
        self._limiter: anyio.CapacityLimiter | None = None
        self._batchers: list[_Batcher] | None = None
        # A session nobody closed (a scorer called outside an eval) stops its workers at exit.
        self._finalizer = weakref.finalize(self, engine.close)

    async def score(self, state: TaskState) -> Score:
        if self._limiter is None or self._batchers is None:  # made in the event loop's thread
            self._limiter = anyio.CapacityLimiter(self.jobs)
            self._batchers = [_Batcher(self.engine, stage) for stage in self.engine.stages]
        sample = _graded_sample(state, self.engine.grader.tasks)
        graded = await anyio.to_thread.run_sync(
            self.engine.grade_tests, sample, limiter=self._limiter
        )
        notes: dict[str, Annotation] = {}
        async with anyio.create_task_group() as group:
            for batcher in self._batchers:
                group.start_soon(batcher.annotate, graded, notes)
        grade = finish(graded, notes)
        return Score(
            value=VALUES[grade.verdict.verdict],
            answer=graded.code,
            explanation=explanation(grade, self.disclosure),
            metadata=shown_row(grade, self.disclosure),
        )

    def close(self) -> None:
        self._finalizer()


def _graded_sample(state: TaskState, tasks: dict[str, GradeboxTask]) -> Sample:
    """The gradebox sample of one epoch's completion: ``<task id>#<epoch - 1>``."""
    task_id = str(state.metadata.get("task") or state.sample_id)
    if task_id not in tasks:
        raise BadInput([f"sample {state.sample_id!r}: task {task_id!r} is not in the task set"])
    return Sample(id=f"{task_id}#{state.epoch - 1}", task=task_id, reply=state.output.completion)


def shown_row(grade: Grade, disclosure: Disclosure) -> dict[str, Any]:
    """The grade's ``results.jsonl`` row as ``disclosure`` shows it (``cases``: all of it)."""
    row: dict[str, Any] = grade.to_row()
    if disclosure == "cases":
        return row
    from gradebox.service.rows import shown  # noqa: PLC0415 - the service's rule, on use only

    return shown({**row, "disclosure": disclosure}, admin=False)


def explanation(grade: Grade, disclosure: Disclosure) -> str:
    """One line for a person: the verdict, the cases as far as disclosed, static, judge."""
    v = grade.verdict
    parts = [v.verdict if v.reason == "ok" else f"{v.verdict} ({v.reason})"]
    t = grade.tests
    if t.outcomes and disclosure != "verdict":
        ok = t.outcomes.count("ok")
        parts.append(f"{ok} of {len(t.outcomes)} hidden cases ok")
        bad = [f"{i} {o}" for i, o in enumerate(t.outcomes) if o != "ok"]
        if bad and disclosure == "cases":
            parts.append("cases " + ", ".join(bad[:5]) + (", ..." if len(bad) > 5 else ""))
    if t.detail and v.reason in ("contract", "gate:syntax", "claim_false"):
        parts.append(t.detail[:200])
    if t.infra_error:
        parts.append(f"infrastructure error: {t.infra_error[:200]}")
    if grade.static is not None and grade.static.findings:
        parts.append(f"static: {len(grade.static.findings)} findings ({grade.static.effect})")
    if grade.judge is not None and grade.judge.status != "skipped":
        parts.append(f"judge: {grade.judge.verdict or grade.judge.status}")
    return "; ".join(parts)


class _Live:
    """The pools with running workers, to stop when an eval's run ends."""

    def __init__(self) -> None:
        self._pools: weakref.WeakSet[_Pool] = weakref.WeakSet()
        self._lock = threading.Lock()

    def add(self, pool: _Pool) -> None:
        with self._lock:
            self._pools.add(pool)

    def discard(self, pool: _Pool) -> None:
        with self._lock:
            self._pools.discard(pool)

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._pools)

    def take(self) -> list[_Pool]:
        with self._lock:
            pools = list(self._pools)
            self._pools.clear()
            return pools


# inspect runs one eval at a time per process and has no per-scorer teardown: its hooks
# are process-wide by design (and it imports this module, through the entry point, when
# any eval starts), so the pools opened during a run are tracked here.
_LIVE = _Live()


@hooks(name="gradebox_workers", description="Stops gradebox's sandbox workers when a run ends.")
class _StopWorkers(Hooks):
    """Stops the sandbox workers of every gradebox scorer when an eval's run ends."""

    def enabled(self) -> bool:
        """Only while workers run: inspect lists enabled hooks when any eval starts."""
        return bool(_LIVE)

    async def on_run_end(self, data: RunEnd) -> None:
        """Close every pool opened during the run (the next eval opens its own)."""
        for pool in _LIVE.take():
            await anyio.to_thread.run_sync(pool.close)
