"""Benchmarks in: HumanEval, MBPP, APPS, LiveCodeBench and BigCodeBench as gradebox task sets.

Example:
    >>> from pathlib import Path
    >>> from gradebox.benchmarks import import_benchmark
    >>> tasks, report = import_benchmark("humaneval", Path("HumanEval.jsonl.gz"))  # doctest: +SKIP
    >>> report.tasks  # doctest: +SKIP
    164

An import reads the benchmark's own file layout (each reader cites it), turns
every check it can into a plain case whose expected value stays outside the
sandbox, keeps the rest as tests of a test program, and reports what it did
(:class:`ImportReport`). With a sandbox, the references run first to find
where the benchmark's ``==`` is laxer than gradebox's compare. A benchmark file
is hostile input: an import is bounded in cases and bytes per row and per file
(:class:`Bounds`, :mod:`gradebox.benchmarks.bounds`); a row over a bound is
skipped whole, with its reason in the report.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

from gradebox.benchmarks.bigcodebench import read_bigcodebench
from gradebox.benchmarks.bounds import (
    DEFAULT_BOUNDS,
    Bounds,
    FileTally,
    TooLarge,
    row_cases_message,
)
from gradebox.benchmarks.build import finish
from gradebox.benchmarks.check import observe_references
from gradebox.benchmarks.humaneval import read_humaneval, read_mbpp
from gradebox.benchmarks.records import Draft, Equality, Format, ImportedTask, Skipped
from gradebox.benchmarks.stdio import read_apps, read_livecodebench
from gradebox.benchmarks.write import ImportReport, report_of, write_import, written_bytes
from sandbox.runner import Sandbox
from sandbox.types import Limits

__all__ = [
    "DEFAULT_BOUNDS",
    "FORMATS",
    "Bounds",
    "Equality",
    "Format",
    "ImportReport",
    "ImportedTask",
    "StdoutCompare",
    "import_benchmark",
    "write_import",
]


class _Reader(Protocol):
    def __call__(
        self, path: Path, *, bounds: Bounds = ...
    ) -> tuple[list[Draft], list[Skipped]]: ...


_READERS: dict[str, _Reader] = {
    "humaneval": read_humaneval,
    "mbpp": read_mbpp,
    "apps": read_apps,
    "livecodebench": read_livecodebench,
    "bigcodebench": read_bigcodebench,
}

FORMATS: tuple[Format, ...] = ("humaneval", "mbpp", "apps", "livecodebench", "bigcodebench")
"""Formats ``gradebox import`` reads."""


@dataclass(frozen=True, slots=True)
class StdoutCompare:
    """How the stdio cases of an import compare stdout (written on each case)."""

    mode: Literal["tokens", "exact"] = "tokens"
    """``tokens`` (whitespace-normalised, integers exact, other numbers in tolerance), ``exact``."""
    tol: float | None = None
    """Absolute tolerance of numeric tokens (``None``: the compare's default)."""
    rel_tol: float | None = None
    """Relative tolerance of numeric tokens (``None``: the compare's default)."""

    def apply(self, task: ImportedTask) -> ImportedTask:
        """``task`` with its stdio cases set to compare this way."""
        if self == StdoutCompare():
            return task
        cases = tuple(
            replace(c, compare=self.mode, tol=self.tol, rel_tol=self.rel_tol)
            if c.kind == "stdio"
            else c
            for c in task.cases
        )
        return replace(task, cases=cases)


def import_benchmark(
    fmt: Format,
    source: Path,
    *,
    sandbox: Sandbox | None = None,
    equality: Equality = "strict",
    limits: Limits | None = None,
    jobs: int = 2,
    stdout: StdoutCompare = StdoutCompare(),
    challenge: bool = False,
    bounds: Bounds = DEFAULT_BOUNDS,
) -> tuple[list[ImportedTask], ImportReport]:
    """Read a benchmark file and build its tasks.

    Args:
        fmt: The format.
        source: The benchmark file.
        sandbox: Runs the references to find lax comparisons (``None``: not looked for).
        equality: ``strict`` (default) or ``harness`` (the benchmark's own ``==``).
        limits: Limits for the reference runs.
        jobs: Reference runs at once.
        stdout: How stdio cases compare (tokens or exact, tolerances).
        challenge: (mbpp) Also import ``challenge_test_list``.
        bounds: Cases and bytes per row and per file; a row over them is skipped
            (in the report's ``skipped``), and nothing of it is in the tasks.

    Raises:
        BadInput: The file is not in the format (every problem, ``file:line: ...``),
            or the source itself is over ``bounds.file_bytes``.
        SetupError: The sandbox failed during the reference check.
    """
    if fmt == "mbpp":
        drafts, skipped = read_mbpp(source, challenge=challenge, bounds=bounds)
    else:
        drafts, skipped = _READERS[fmt](source, bounds=bounds)
    drafts = _within_row_cases(drafts, bounds, skipped)
    observed = (
        observe_references(sandbox, drafts, limits or Limits(), jobs=jobs)
        if sandbox is not None
        else {}
    )
    tasks: list[ImportedTask] = []
    tally = FileTally(bounds)
    for draft in drafts:
        try:
            task = stdout.apply(
                finish(
                    draft,
                    observed.get(draft.task_id) if sandbox else None,
                    equality,
                    limit=bounds.row_bytes,
                )
            )
        except TooLarge as exc:
            skipped.append(Skipped(draft.task_id, "task", str(exc)))
            continue
        if not task.cases:
            skipped.append(Skipped(draft.task_id, "task", "no check could be imported"))
            continue
        why = _admit(task, bounds, tally)
        if why is not None:
            skipped.append(Skipped(draft.task_id, "task", why))
            continue
        tasks.append(task)
    report = report_of(
        fmt,
        str(source),
        tasks,
        skipped,
        equality=equality,
        reference_checked=sandbox is not None,
        bounds=bounds,
    )
    return tasks, report


def _within_row_cases(drafts: list[Draft], bounds: Bounds, skipped: list[Skipped]) -> list[Draft]:
    """The drafts with at most ``bounds.row_cases`` checks (before any reference runs)."""
    kept = []
    for draft in drafts:
        checks = sum(s.role == "check" for s in draft.statements)
        cases = checks + len(draft.tests) + len(draft.stdio)
        if cases > bounds.row_cases:
            why = row_cases_message(cases, bounds.row_cases)
            skipped.append(Skipped(draft.task_id, "task", why))
            continue
        kept.append(draft)
    return kept


def _admit(task: ImportedTask, bounds: Bounds, tally: FileTally) -> str | None:
    """``None`` when ``task`` is within the row's bounds and fits in the file's (counted)."""
    cases = len(task.cases)
    if cases > bounds.row_cases:
        return row_cases_message(cases, bounds.row_cases)
    size = written_bytes(task, stop_after=bounds.row_bytes)
    if size > bounds.row_bytes:
        return f"its lines take more than --max-row-bytes ({bounds.row_bytes})"
    return tally.admit(cases, size)
