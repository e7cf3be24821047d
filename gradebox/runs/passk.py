"""pass@k: the unbiased estimator, per task and averaged over tasks.

With ``n`` samples of a task of which ``c`` pass, the chance that at least one of
``k`` samples drawn without replacement passes is ``1 - C(n-c, k) / C(n, k)``
(Chen et al. 2021). The ratio of binomials is computed as the product
``prod_{i=n-c+1}^{n} (1 - k/i)``: no huge integers, no overflow, and every
factor lies in ``[0, 1]``, so the result stays in ``[0, 1]`` and is monotonic in
``k`` and in ``c`` even in floating point.

``k > n`` is *undefined* for that task (``None``; shown as ``n/a``), never 1.0:
a task with 3 samples says nothing about pass@10 (openai/human-eval#35). The
average over tasks covers only the tasks where ``k`` is defined and says how
many those are.

Samples are grouped by the task their row names (``task``; ``fn`` in rows from
before task ids). A sample counts as passing when its row's ``pass`` is true
(verdict ``pass``). Rows of ``gradebox gate`` (one per prediction, ``id`` the
instance) count the same way per instance: a prediction passes when its
verdict is ``pass``.
Samples whose grading failed for a reason that is not the candidate's
(``infra_error``) are counted separately and can be left out of ``n``; samples
with a timed-out case are counted separately too (they stay in ``n``: a timeout
is the candidate's failure).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = [
    "MeanPassK",
    "PassKReport",
    "Tally",
    "TaskPassK",
    "estimate",
    "estimate_tallies",
    "format_passk",
    "format_value",
    "is_gate_row",
    "is_infra",
    "parse_ks",
    "pass_at_k",
    "printable",
    "tally",
]


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """The unbiased pass@k estimate ``1 - C(n-c, k) / C(n, k)``.

    Args:
        n: Samples of the task.
        c: Passing samples among them.
        k: Samples drawn.

    Returns:
        The estimate in ``[0, 1]``, or ``None`` when ``k > n`` (undefined).

    Raises:
        ValueError: ``k < 1``, ``n < 0`` or ``c`` outside ``0..n``.
    """
    if k < 1 or n < 0 or not 0 <= c <= n:
        raise ValueError(f"pass@k needs k >= 1 and 0 <= c <= n (got n={n}, c={c}, k={k})")
    if k > n:
        return None
    if n - c < k:  # every draw of k includes a passing sample
        return 1.0
    if k == 1:  # exactly c/n, the figure the grade summary reports as pass@1
        return c / n
    # C(n-c, k) / C(n, k) == prod_{i=n-c+1}^{n} (i - k) / i. Multiplying from the
    # smallest factor up keeps the result monotonic in c under rounding; the floor
    # c/n (= pass@1 <= pass@k) only absorbs rounding, keeping it monotonic in k too.
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= (i - k) / i
    return max(1.0 - miss, c / n)


def parse_ks(text: str) -> tuple[int, ...]:
    """Parse ``"1,5,10"`` into sorted, distinct k values.

    Raises:
        ValueError: A value is not an integer >= 1, or none is given.
    """
    ks: set[int] = set()
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise ValueError(f"k must be an integer >= 1, got {part!r}")
        ks.add(int(part))
    if not ks:
        raise ValueError("give at least one k, e.g. 1,5,10")
    return tuple(sorted(ks))


def is_infra(row: Mapping[str, Any]) -> bool:
    """True when the row's grading failed for a reason that is not the candidate's."""
    return bool(row.get("infra_error")) or row.get("reason") == "infra_error"


@dataclass(frozen=True, slots=True)
class TaskPassK:
    """pass@k of one task."""

    task: str
    """The task's id."""
    n: int
    """Samples counted (infra-error samples left out when excluded)."""
    c: int
    """Passing samples."""
    timeouts: int
    """Samples with at least one timed-out case (they count in ``n``)."""
    infra_errors: int
    """Samples whose grading failed for a reason that is not the candidate's."""
    excluded: int
    """Infra-error samples left out of ``n``."""
    pass_at: dict[int, float | None]
    """pass@k by k; ``None`` where ``k > n``."""


@dataclass(frozen=True, slots=True)
class MeanPassK:
    """pass@k for one k, averaged over the tasks where it is defined."""

    k: int
    """The k."""
    value: float | None
    """Mean over covered tasks, each weighted equally; ``None`` if none is covered."""
    tasks: int
    """Tasks covered (``k <= n``)."""
    of: int
    """All tasks."""


@dataclass(frozen=True, slots=True)
class PassKReport:
    """pass@k of a run: per task and averaged."""

    ks: tuple[int, ...]
    """The k values, ascending."""
    exclude_infra: bool
    """Whether infra-error samples were left out of ``n``."""
    samples: int
    """Rows read."""
    tasks: tuple[TaskPassK, ...]
    """Per task, sorted by id."""
    mean: dict[int, MeanPassK]
    """Per k."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: undefined values are ``null``."""
        return {
            "k": list(self.ks),
            "exclude_infra": self.exclude_infra,
            "samples": self.samples,
            "mean": {
                f"pass@{k}": {"value": m.value, "tasks": m.tasks, "of": m.of}
                for k, m in self.mean.items()
            },
            "tasks": {
                t.task: {
                    "n": t.n,
                    "c": t.c,
                    "timeouts": t.timeouts,
                    "infra_errors": t.infra_errors,
                    "excluded": t.excluded,
                    **{f"pass@{k}": v for k, v in t.pass_at.items()},
                }
                for t in self.tasks
            },
        }


class Tally(NamedTuple):
    """What pass@k needs of one sample."""

    task: str
    """The task's id."""
    passed: bool
    """The verdict is ``pass``."""
    timed_out: bool
    """Some case ran out of time."""
    infra: bool
    """The grader failed (no real verdict)."""


def tally(row: Mapping[str, Any]) -> Tally:
    """A row's :class:`Tally`: a results row (by ``task`` or ``fn``) or a gate row (by ``id``)."""
    if is_gate_row(row):
        infra = is_infra(row) or row.get("reason") == "not_run"
        return Tally(str(row["id"]), row.get("verdict") == "pass", False, infra)
    task = str(row.get("task") or row["fn"])
    return Tally(task, row.get("pass") is True, bool(row.get("timeouts")), is_infra(row))


def is_gate_row(row: Mapping[str, Any]) -> bool:
    """A ``gradebox gate`` row (one patch prediction), not a ``results.jsonl`` row."""
    return "resolved" in row and "outcomes" not in row


def estimate(
    rows: Iterable[Mapping[str, Any]], ks: Sequence[int], *, exclude_infra: bool = False
) -> PassKReport:
    """pass@k per task and averaged over tasks, from results rows.

    Args:
        rows: Results rows (``task`` or ``fn``, ``pass``, ``timeouts``, ``infra_error``,
            ``reason``) or gate rows (``id``, ``verdict``, ``reason``, ``infra_error``).
        ks: The k values (each >= 1).
        exclude_infra: Leave infra-error samples out of ``n``.

    Returns:
        The report; a task whose ``n`` is below ``k`` has ``None`` for that k.
    """
    return estimate_tallies(map(tally, rows), ks, exclude_infra=exclude_infra)


def estimate_tallies(
    tallies: Iterable[Tally], ks: Sequence[int], *, exclude_infra: bool = False
) -> PassKReport:
    """pass@k per task and averaged over tasks (see :func:`estimate`)."""
    ks = tuple(sorted(set(ks)))
    counts: dict[str, list[int]] = {}  # task id -> [n, c, timeouts, infra]
    samples = 0
    for t in tallies:
        samples += 1
        n_c_t_i = counts.setdefault(t.task, [0, 0, 0, 0])
        n_c_t_i[3] += t.infra
        n_c_t_i[2] += t.timed_out
        if t.infra and exclude_infra:
            continue
        n_c_t_i[0] += 1
        n_c_t_i[1] += t.passed
    tasks = tuple(
        _task(tid, n, c, t, i, ks, exclude_infra) for tid, (n, c, t, i) in sorted(counts.items())
    )
    return PassKReport(ks, exclude_infra, samples, tasks, {k: _mean(tasks, k) for k in ks})


def _task(
    task: str, n: int, c: int, timeouts: int, infra: int, ks: Sequence[int], exclude: bool
) -> TaskPassK:
    return TaskPassK(
        task=task,
        n=n,
        c=c,
        timeouts=timeouts,
        infra_errors=infra,
        excluded=infra if exclude else 0,
        pass_at={k: pass_at_k(n, c, k) for k in ks},
    )


def _mean(tasks: Sequence[TaskPassK], k: int) -> MeanPassK:
    values = [v for t in tasks if (v := t.pass_at[k]) is not None]
    value = math.fsum(values) / len(values) if values else None
    return MeanPassK(k=k, value=value, tasks=len(values), of=len(tasks))


def format_value(value: float | None) -> str:
    """``0.333`` or ``n/a`` for an undefined value."""
    return "n/a" if value is None else f"{value:.3f}"


def format_passk(report: PassKReport, *, max_tasks: int = 200) -> str:
    """Render a report as a table for a terminal.

    Args:
        report: What :func:`estimate` returned.
        max_tasks: Tasks listed before the rest are summarised in one line.
    """
    ks = report.ks
    grid = [["task", "n", "c", "timeouts", "infra", *(f"pass@{k}" for k in ks)]]
    for t in report.tasks[:max_tasks]:
        counts = [str(v) for v in (t.n, t.c, t.timeouts, t.infra_errors)]
        grid.append([printable(t.task), *counts, *(format_value(t.pass_at[k]) for k in ks)])
    means = [report.mean[k] for k in ks]
    grid.append(["mean over tasks", "", "", "", "", *(format_value(m.value) for m in means)])
    grid.append(["tasks covered", "", "", "", "", *(f"{m.tasks}/{m.of}" for m in means)])
    widths = [max(len(row[i]) for row in grid) for i in range(len(grid[0]))]
    table = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in grid
    ]
    if len(report.tasks) > max_tasks:
        table.insert(-2, f"... {len(report.tasks) - max_tasks} more tasks (see --json)")
    note = "; infra-error samples left out of n" if report.exclude_infra else ""
    head = (
        f"pass@k over {len(report.tasks)} tasks, {report.samples} samples "
        f"(unbiased estimator; n/a where k > n, and such tasks are left out of the mean{note})"
    )
    return "\n".join([head, *table])


def printable(text: str) -> str:
    """``text`` with control characters shown escaped (safe for a terminal)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
