"""gradebox's pipeline opened once and fed one reply at a time, for a framework's scorer.

``gradebox grade`` streams a file of samples through its pipeline
(:func:`gradebox.pipeline.tests.grade_all`); a framework such as inspect_ai hands
a scorer one reply at a time, from many samples at once. An :class:`Engine` holds
the same parts (the sandbox's warm workers, the :class:`~gradebox.pipeline.tests.Grader`,
the static and judge stages), opened once by :func:`open_engine` and closed once by
:meth:`Engine.close`, and grades each reply with them: :meth:`Engine.grade_tests`
(extract, gate, hidden cases), :meth:`Engine.annotate` (a stage over a batch)
and :func:`gradebox.pipeline.core.finish` (the verdict). Failures are handled as
in ``gradebox grade``: a grader error is the sample's ``infra_error``, a stage
error its stage's ``crashed`` annotation.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gradebox.errors import SetupError
from gradebox.model import Sample, Task
from gradebox.pipeline.core import Annotation, Graded, Stage
from gradebox.pipeline.tests import GradeConfig, Grader, infra_grade
from sandbox.errors import IsolationUnavailable
from sandbox.runner import Sandbox, open_sandbox
from sandbox.types import Limits

__all__ = ["Engine", "EngineOptions", "open_engine"]


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """Which layers grade, and where."""

    static: bool = True
    """Run the static layers (ruff, mypy, bandit, imports, metrics) after the sandbox."""
    judge: Literal["off", "wait"] = "off"
    """``wait``: the LLM judge annotates each sample before its score is returned."""
    isolation: str = "bwrap"
    """The sandbox backend (``bwrap``, ``auto`` or ``none``)."""
    jobs: int = 4
    """Sandbox workers: candidates run at once."""
    limits: Limits = field(default_factory=Limits)
    """Resource limits per candidate."""


class Engine:
    """An open pipeline: sandbox workers, grader and stages; see the module docstring."""

    def __init__(
        self, grader: Grader, stages: Sequence[Stage], stack: contextlib.ExitStack
    ) -> None:
        """Wrap open parts; use :func:`open_engine` instead."""
        self.grader = grader
        self.stages: tuple[Stage, ...] = tuple(stages)
        self._stack = stack

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox every candidate of this engine runs in."""
        return self.grader.sandbox

    def grade_tests(self, sample: Sample) -> Graded:
        """Extract, gate and run the hidden cases of one sample (blocks; thread-safe).

        A grader error becomes the sample's ``infra_error`` (``needs_review``), as in
        ``gradebox grade``; nothing the candidate does raises here.
        """
        try:
            return self.grader.grade_tests(sample)
        except Exception as exc:
            message = f"grader error: {type(exc).__name__}: {exc}"
            grade = infra_grade(sample, message, self.grader.tasks)
            return Graded(
                grade.id, grade.fn, None, None, None, grade.tests, grade.verdict, task=grade.task
            )

    def annotate(self, stage: Stage, items: Sequence[Graded]) -> list[Annotation]:
        """``stage``'s annotations of ``items`` (blocks); a stage error is its ``crashed`` note."""
        try:
            notes = stage.run(items)
            if len(notes) != len(items):
                raise RuntimeError(f"{len(notes)} annotations for {len(items)} samples")
        except Exception as exc:
            return stage.crashed(items, f"{stage.field} stage error: {type(exc).__name__}: {exc}")
        return notes

    def close(self) -> None:
        """Stop the workers and the stages; safe to call twice."""
        self._stack.close()


def open_engine(
    tasks: Mapping[str, Task], options: EngineOptions, environ: Mapping[str, str]
) -> Engine:
    """Start the sandbox's workers (checking their isolation) and open the stages.

    Args:
        tasks: The tasks by id, with their hidden cases.
        options: The layers and the sandbox.
        environ: The environment (the judge's ``GRADEBOX_JUDGE_*``, the cache
            location), read here only.

    Raises:
        SetupError: The sandbox is refused, a static tool is missing, or the judge
            is asked for and no endpoint is configured.
        BadInput: A rubric the tasks name is missing or invalid.
    """
    with contextlib.ExitStack() as stack:
        try:
            sandbox = open_sandbox(options.isolation, options.limits, workers=options.jobs)
        except IsolationUnavailable as exc:
            raise SetupError(str(exc)) from exc
        stack.callback(sandbox.close)
        stages: list[Stage] = []
        if options.static:
            stages.append(_static(stack, options.jobs, environ))
        if options.judge == "wait":
            stages.append(_judge(stack, tasks, environ))
        grader = Grader(sandbox, dict(tasks), GradeConfig(limits=options.limits))
        return Engine(grader, stages, stack.pop_all())


def _static(stack: contextlib.ExitStack, jobs: int, environ: Mapping[str, str]) -> Stage:
    from gradebox.pipeline.static import default_stdlib_cache, open_static_stage  # noqa: PLC0415

    cache = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gradebox-mypy-")))
    static = open_static_stage(
        cache_dir=cache, jobs=jobs, stdlib_cache=default_stdlib_cache(environ)
    )
    stack.callback(static.close)  # its warm workers, before the cache directory goes
    return static


def _judge(
    stack: contextlib.ExitStack, tasks: Mapping[str, Task], environ: Mapping[str, str]
) -> Stage:
    from gradebox.pipeline.judge import SkippedJudge, open_judge_stage  # noqa: PLC0415

    publics = [t.public for t in tasks.values() if t.public is not None]
    judge = open_judge_stage(environ, rubric_names=[p.rubric for p in publics if p.spec.strip()])
    stack.callback(judge.close)
    if isinstance(judge, SkippedJudge):
        raise SetupError(
            "judge='wait' needs a judge endpoint: set GRADEBOX_JUDGE_BASE_URL and "
            "GRADEBOX_JUDGE_MODEL (or OPENAI_API_KEY), or use judge='off'"
        )
    return judge
