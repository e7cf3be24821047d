"""The end-of-run summary: counts, pass@1 per task, and a one-screen text form."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = ["format_summary", "summarize"]


def summarize(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Count verdicts, reasons and outcomes; pass@1 (k=1) per task and averaged.

    pass@1 with n samples of which c pass is c/n (the unbiased estimator at k=1);
    the average is over tasks, each task weighted equally.
    """
    rows = list(rows)
    verdicts = Counter(r["verdict"] for r in rows)
    reasons = Counter(r["reason"] for r in rows)
    per_task: dict[str, list[int]] = {}
    for r in rows:
        c_n = per_task.setdefault(r["fn"], [0, 0])
        c_n[0] += bool(r["pass"])
        c_n[1] += 1
    tasks = {fn: {"n": n, "c": c, "pass@1": c / n} for fn, (c, n) in sorted(per_task.items())}
    return {
        "samples": len(rows),
        "passed": verdicts.get("pass", 0),
        "failed": verdicts.get("fail", 0),
        "needs_review": verdicts.get("needs_review", 0),
        "with_timeouts": sum(1 for r in rows if r["timeouts"]),
        "with_errors": sum(1 for r in rows if "error" in r["outcomes"]),
        "with_crashes": sum(1 for r in rows if "crash" in r["outcomes"]),
        "infra_errors": sum(1 for r in rows if r.get("infra_error")),
        "reasons": dict(sorted(reasons.items())),
        "k": 1,
        "pass@1": (sum(t["pass@1"] for t in tasks.values()) / len(tasks)) if tasks else None,
        "tasks": tasks,
    }


def format_summary(s: dict[str, Any], *, seconds: float, backend: str) -> str:
    """Render the summary for a terminal (one screen)."""
    lines = [
        f"graded {s['samples']} samples in {seconds:.1f}s (isolation: {backend})",
        f"  pass {s['passed']}   fail {s['failed']}   needs_review {s['needs_review']}",
        f"  samples with timeouts {s['with_timeouts']}   with errors {s['with_errors']}   "
        f"with crashes {s['with_crashes']}   infra errors {s['infra_errors']}",
        "  reasons: " + ", ".join(f"{k} {v}" for k, v in s["reasons"].items()),
    ]
    if s["pass@1"] is not None:
        lines.append(f"  pass@1 (k=1, mean over {len(s['tasks'])} tasks): {s['pass@1']:.3f}")
    width = max((len(fn) for fn in s["tasks"]), default=4)
    for fn, t in list(s["tasks"].items())[:30]:
        lines.append(
            f"    {fn:<{width}}  n={t['n']:<4} passed={t['c']:<4} pass@1={t['pass@1']:.3f}"
        )
    if len(s["tasks"]) > 30:
        lines.append(f"    ... {len(s['tasks']) - 30} more tasks (see --json)")
    return "\n".join(lines)
