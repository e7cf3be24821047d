"""Comparing two runs: what newly fails, what newly passes, what else changed.

Samples are matched by id, tasks by their id (``task``; ``fn`` in rows from
before task ids). Each sample in both runs lands in at most one list:

- **newly failing**: the new verdict is ``fail`` and the old one was not;
- **newly passing**: the new verdict is ``pass`` and the old one was not;
- **failing on other cases**: ``fail`` in both, but the set of failing hidden
  cases (``wrong``, ``error``, ``crash`` or ``timeout``) differs;
- **verdict or reason changed**: anything else whose verdict or reason differs
  (``hidden_tests`` -> ``claim_false``, ``pass`` -> ``needs_review``...).

Samples only in one run are listed as added or removed. pass@k is compared per
task and averaged (an undefined side makes the delta undefined). Only a newly
failing sample is a regression (:attr:`RunDiff.regressed`); a pass that now
needs review is reported but does not gate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradebox.runs.passk import PassKReport, estimate, format_value

__all__ = ["Change", "KDelta", "RunDiff", "diff_runs", "failing_cases", "format_diff"]

_FAILING = frozenset({"wrong", "error", "not_raised", "crash", "resource", "timeout"})


@dataclass(frozen=True, slots=True)
class Change:
    """One sample whose grade changed between the runs."""

    id: str
    """The sample id."""
    task: str
    """The task's id (as in the new run)."""
    old_verdict: str
    """Verdict in the old run."""
    old_reason: str
    """Reason in the old run."""
    new_verdict: str
    """Verdict in the new run."""
    new_reason: str
    """Reason in the new run."""
    old_cases: tuple[int, ...]
    """Failing hidden cases in the old run, by index."""
    new_cases: tuple[int, ...]
    """Failing hidden cases in the new run, by index."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON."""
        return {
            "id": self.id,
            "task": self.task,
            "old": {
                "verdict": self.old_verdict,
                "reason": self.old_reason,
                "failing_cases": list(self.old_cases),
            },
            "new": {
                "verdict": self.new_verdict,
                "reason": self.new_reason,
                "failing_cases": list(self.new_cases),
            },
        }


@dataclass(frozen=True, slots=True)
class KDelta:
    """pass@k of one task (or the mean) in both runs."""

    task: str | None
    """The task's id; ``None`` for the mean over tasks."""
    k: int
    """The k."""
    old: float | None
    """Old pass@k (``None``: undefined or task absent)."""
    new: float | None
    """New pass@k."""
    old_tasks: int | None = None
    """For the mean: tasks it covers in the old run (``None`` for a task row)."""
    new_tasks: int | None = None
    """For the mean: tasks it covers in the new run."""

    @property
    def delta(self) -> float | None:
        """``new - old``, or ``None`` when either side is undefined."""
        return None if self.old is None or self.new is None else self.new - self.old


@dataclass(frozen=True, slots=True)
class RunDiff:
    """The differences between an old and a new run."""

    newly_failing: tuple[Change, ...]
    """Verdict ``fail`` now, not before."""
    newly_passing: tuple[Change, ...]
    """Verdict ``pass`` now, not before."""
    changed_cases: tuple[Change, ...]
    """``fail`` in both, on a different set of hidden cases."""
    changed_reasons: tuple[Change, ...]
    """Any other change of verdict or reason."""
    added: tuple[str, ...]
    """Sample ids only in the new run."""
    removed: tuple[str, ...]
    """Sample ids only in the old run."""
    unchanged: int
    """Samples in both runs with nothing of the above."""
    passk: tuple[KDelta, ...]
    """The means first (one per k), then per task and k, tasks sorted."""
    warnings: tuple[str, ...]
    """Things that make the comparison weaker (e.g. a task's case count changed)."""

    @property
    def regressed(self) -> bool:
        """Something newly fails: a CI gate should stop."""
        return bool(self.newly_failing)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON; undefined pass@k values are ``null``."""
        return {
            "regressed": self.regressed,
            "counts": {
                "newly_failing": len(self.newly_failing),
                "newly_passing": len(self.newly_passing),
                "changed_cases": len(self.changed_cases),
                "changed_reasons": len(self.changed_reasons),
                "added": len(self.added),
                "removed": len(self.removed),
                "unchanged": self.unchanged,
            },
            "newly_failing": [c.to_json() for c in self.newly_failing],
            "newly_passing": [c.to_json() for c in self.newly_passing],
            "changed_cases": [c.to_json() for c in self.changed_cases],
            "changed_reasons": [c.to_json() for c in self.changed_reasons],
            "added": list(self.added),
            "removed": list(self.removed),
            "passk": [
                {"task": d.task, "k": d.k, "old": d.old, "new": d.new, "delta": d.delta}
                | ({} if d.task else {"old_tasks": d.old_tasks, "new_tasks": d.new_tasks})
                for d in self.passk
            ],
            "warnings": list(self.warnings),
        }


def failing_cases(row: Mapping[str, Any]) -> tuple[int, ...]:
    """Indexes of the hidden cases that failed or timed out (``not_run`` is not a failure)."""
    return tuple(i for i, o in enumerate(row.get("outcomes") or ()) if o in _FAILING)


def diff_runs(
    old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]], ks: Sequence[int] = (1,)
) -> RunDiff:
    """Compare two runs' rows.

    Args:
        old: Rows of the earlier run (unique ids).
        new: Rows of the later run (unique ids).
        ks: The k values for the pass@k comparison.

    Returns:
        The differences; lists are in the new run's row order.
    """
    before = {str(r["id"]): r for r in old}
    lists: dict[str, list[Change]] = {"fail": [], "pass": [], "cases": [], "reason": []}
    unchanged = 0
    for row in new:
        prev = before.get(str(row["id"]))
        if prev is None:
            continue
        kind = _classify(prev, row)
        if kind is None:
            unchanged += 1
        else:
            lists[kind].append(_change(prev, row))
    after = {str(r["id"]) for r in new}
    return RunDiff(
        newly_failing=tuple(lists["fail"]),
        newly_passing=tuple(lists["pass"]),
        changed_cases=tuple(lists["cases"]),
        changed_reasons=tuple(lists["reason"]),
        added=tuple(str(r["id"]) for r in new if str(r["id"]) not in before),
        removed=tuple(sid for sid in before if sid not in after),
        unchanged=unchanged,
        passk=_passk_deltas(estimate(old, ks), estimate(new, ks)),
        warnings=_case_count_warnings(old, new),
    )


def _classify(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    if new["verdict"] == "fail" and old["verdict"] != "fail":
        return "fail"
    if new["verdict"] == "pass" and old["verdict"] != "pass":
        return "pass"
    if new["verdict"] == "fail" and failing_cases(old) != failing_cases(new):
        return "cases"
    if (old["verdict"], old.get("reason")) != (new["verdict"], new.get("reason")):
        return "reason"
    return None


def _change(old: Mapping[str, Any], new: Mapping[str, Any]) -> Change:
    return Change(
        id=str(new["id"]),
        task=_task(new),
        old_verdict=str(old["verdict"]),
        old_reason=str(old.get("reason", "")),
        new_verdict=str(new["verdict"]),
        new_reason=str(new.get("reason", "")),
        old_cases=failing_cases(old),
        new_cases=failing_cases(new),
    )


def _passk_deltas(old: PassKReport, new: PassKReport) -> tuple[KDelta, ...]:
    deltas = [
        KDelta(None, k, old.mean[k].value, new.mean[k].value, old.mean[k].tasks, new.mean[k].tasks)
        for k in new.ks
    ]
    before = {t.task: t.pass_at for t in old.tasks}
    after = {t.task: t.pass_at for t in new.tasks}
    for tid in sorted(before.keys() | after.keys()):
        for k in new.ks:
            deltas.append(KDelta(tid, k, before.get(tid, {}).get(k), after.get(tid, {}).get(k)))
    return tuple(deltas)


def _task(row: Mapping[str, Any]) -> str:
    """The row's task id (``fn`` in rows from before task ids)."""
    return str(row.get("task") or row["fn"])


def _case_count_warnings(
    old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> tuple[str, ...]:
    def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in rows:
            if r.get("outcomes"):
                out[_task(r)] = max(out.get(_task(r), 0), len(r["outcomes"]))
        return out

    a, b = counts(old), counts(new)
    return tuple(
        f"task {t!r} has {a[t]} hidden cases in the old run and {b[t]} in the new one: "
        "case indexes may not name the same cases"
        for t in sorted(a.keys() & b.keys())
        if a[t] != b[t]
    )


def _safe(text: str, width: int = 0) -> str:
    """Printable text for a terminal: control characters shown escaped, then padded."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return f"{shown:<{width}}"


def _cases(cases: tuple[int, ...]) -> str:
    if not cases:
        return "-"
    shown = ",".join(str(i) for i in cases[:12])
    return shown + (f",... (+{len(cases) - 12})" if len(cases) > 12 else "")


def format_diff(diff: RunDiff, *, old_name: str = "old", new_name: str = "new") -> str:
    """Render a diff as readable tables for a terminal."""
    lines = [
        f"gradebox diff: {_safe(old_name)} -> {_safe(new_name)}",
        f"  newly failing {len(diff.newly_failing)}   newly passing {len(diff.newly_passing)}"
        f"   failing on other cases {len(diff.changed_cases)}"
        f"   verdict/reason changed {len(diff.changed_reasons)}"
        f"   added {len(diff.added)}   removed {len(diff.removed)}   unchanged {diff.unchanged}",
    ]
    lines += [f"  warning: {_safe(w)}" for w in diff.warnings]
    sections = (
        ("NEWLY FAILING", diff.newly_failing),
        ("NEWLY PASSING", diff.newly_passing),
        ("FAILING ON OTHER CASES", diff.changed_cases),
        ("VERDICT OR REASON CHANGED", diff.changed_reasons),
    )
    for title, changes in sections:
        if changes:
            lines += ["", f"{title} ({len(changes)})", *_change_table(changes)]
    for title, ids in (("ADDED", diff.added), ("REMOVED", diff.removed)):
        if ids:
            lines += ["", f"{title} ({len(ids)})", "  " + ", ".join(_safe(i) for i in ids[:50])]
    lines += ["", *_passk_table(diff.passk)]
    return "\n".join(lines)


def _change_table(changes: Sequence[Change]) -> list[str]:
    wid = max(len("sample"), *(len(_safe(c.id)) for c in changes))
    wfn = max(len("task"), *(len(_safe(c.task)) for c in changes))
    old = [f"{c.old_verdict} ({c.old_reason})" for c in changes]
    new = [f"{c.new_verdict} ({c.new_reason})" for c in changes]
    wold = max(len("old"), *(len(o) for o in old))
    wnew = max(len("new"), *(len(n) for n in new))
    out = [
        f"  {'sample':<{wid}}  {'task':<{wfn}}  {'old':<{wold}}  {'new':<{wnew}}  "
        "failing cases old -> new"
    ]
    for c, o, n in zip(changes, old, new, strict=True):
        out.append(
            f"  {_safe(c.id, wid)}  {_safe(c.task, wfn)}  {o:<{wold}}  {n:<{wnew}}  "
            f"{_cases(c.old_cases)} -> {_cases(c.new_cases)}"
        )
    return out


def _passk_table(deltas: Sequence[KDelta]) -> list[str]:
    names = [("mean over tasks" if d.task is None else _safe(d.task)) for d in deltas]
    width = max(len("task"), *(len(n) for n in names)) if names else 4
    out = [f"PASS@K  {'task':<{width}}  {'k':>3}  {'old':>7}  {'new':>7}  {'delta':>7}"]
    same = 0
    for d, name in zip(deltas, names, strict=True):
        if d.task is not None and d.old == d.new:
            same += 1
            continue
        delta = "n/a" if d.delta is None else f"{d.delta:+.3f}"
        line = (
            f"        {name:<{width}}  {d.k:>3}  {format_value(d.old):>7}  "
            f"{format_value(d.new):>7}  {delta:>7}"
        )
        if d.task is None and d.old_tasks != d.new_tasks:
            line += f"  (over {d.old_tasks} -> {d.new_tasks} tasks: not the same set)"
        out.append(line)
    if same:
        out.append(f"        ({same} task rows unchanged, not shown; see --json)")
    return out
