"""The end-of-run summary: counts, pass@1 per task, static and judge figures, a text form.

Static figures: findings by severity, samples the policy failed or sent to
review, samples on which a static tool failed. Judge reliability: results by
status, cache hits, retries, mismatches, and how often the judge's intent
verdict agrees with the hidden tests (a confusion table, Cohen's kappa and
Scott's pi with bootstrap intervals, leniency and strictness: one implementation,
:mod:`gradebox.judging`), how often repeated judgements flip, and the backend
fingerprints fresh replies carried, so a user sees at a glance whether this judge
can be trusted on this task set.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = ["format_summary", "summarize"]


def summarize(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Count verdicts, reasons and outcomes; pass@1 (k=1) per task and averaged.

    pass@1 with n samples of which c pass is c/n (the unbiased estimator at k=1);
    the average is over tasks, each task weighted equally.

    One pass over ``rows`` (rows read back from a file need not fit in memory);
    only what the judge's agreement figures need is kept, and only of rows they
    count (see :class:`_JudgeTally`).
    """
    verdicts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    per_task: dict[str, list[int]] = {}
    static = _StaticTally()
    judge = _JudgeTally()
    for r in rows:
        verdicts[r["verdict"]] += 1
        reasons[r["reason"]] += 1
        c_n = per_task.setdefault(r.get("task") or r["fn"], [0, 0])
        c_n[0] += bool(r["pass"])
        c_n[1] += 1
        counts["with_timeouts"] += bool(r["timeouts"])
        counts["with_errors"] += "error" in r["outcomes"]
        counts["with_crashes"] += "crash" in r["outcomes"]
        counts["infra_errors"] += bool(r.get("infra_error"))
        if r.get("static"):
            static.add(r["static"])
        if r.get("judge"):
            judge.add(r)
    tasks = {t: {"n": n, "c": c, "pass@1": c / n} for t, (c, n) in sorted(per_task.items())}
    return {
        "samples": verdicts.total(),
        "passed": verdicts.get("pass", 0),
        "failed": verdicts.get("fail", 0),
        "needs_review": verdicts.get("needs_review", 0),
        **{k: counts[k] for k in ("with_timeouts", "with_errors", "with_crashes", "infra_errors")},
        "reasons": dict(sorted(reasons.items())),
        "k": 1,
        "pass@1": (sum(t["pass@1"] for t in tasks.values()) / len(tasks)) if tasks else None,
        "tasks": tasks,
        "static": static.result(),
        "judge": judge.result(),
    }


_SEVERITIES = ("high", "medium", "low", "info")
_STATUSES = ("scored", "needs_review", "unavailable", "skipped")


class _StaticTally:
    """The static figures, counted one row's ``static`` field at a time."""

    def __init__(self) -> None:
        self.checked = self.policy_fail = self.policy_review = self.infra_errors = 0
        self.severities: Counter[str] = Counter()

    def add(self, s: dict[str, Any]) -> None:
        self.checked += 1
        self.severities.update(s["counts"]["by_severity"])
        self.policy_fail += s["effect"] == "fail"
        self.policy_review += s["effect"] == "review"
        self.infra_errors += bool(s["infra_error"])

    def result(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "findings": {k: self.severities.get(k, 0) for k in _SEVERITIES},
            "policy_fail": self.policy_fail,
            "policy_review": self.policy_review,
            "infra_errors": self.infra_errors,
        }


_FIGURE_FIELDS = ("status", "verdict", "repeat", "scores", "invariance", "panel")
"""What the agreement, flip, probe and panel figures read of a row's judge."""


class _JudgeTally:
    """The judge's figures, counted one row at a time.

    Counts are kept as they come; for the agreement, flip, probe and panel
    figures (:mod:`gradebox.judging`) only the rows they can count are kept
    (scored, or judged more than once, or by a panel), each cut to what those
    figures read: a run whose judge was skipped keeps nothing per row.
    """

    def __init__(self) -> None:
        self.rows = self.cache_hits = self.retries = self.mismatches = 0
        self.statuses: Counter[str] = Counter()
        self.fresh: Counter[str] = Counter()
        self.kept: list[dict[str, Any]] = []

    def add(self, r: dict[str, Any]) -> None:
        j = r["judge"]
        self.rows += 1
        self.statuses[j["status"]] += 1
        self.cache_hits += bool(j.get("cache_hit"))
        self.retries += max(0, (j.get("attempts") or 0) - 1)
        self.mismatches += j["status"] == "scored" and j["verdict"] == "mismatch"
        if j.get("system_fingerprint") and not j.get("cache_hit"):
            self.fresh[str(j["system_fingerprint"])] += 1
        if j["status"] == "scored" or isinstance(j.get("repeat"), dict) or j.get("panel"):
            self.kept.append(_for_figures(r))

    def result(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            **{k: self.statuses.get(k, 0) for k in _STATUSES},
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "mismatches": self.mismatches,
            **(self.figures() if self.kept else copy.deepcopy(_NO_FIGURES)),
            "fingerprints": dict(self.fresh),
        }

    def figures(self) -> dict[str, Any]:
        """The agreement, flip, probe and panel figures of the kept rows."""
        # Loaded here: a run that kept no row for them (no judge) never needs it.
        from gradebox.judging import flip_rates, invariance, panel, versus_tests  # noqa: PLC0415

        flips = flip_rates(self.kept)
        return {
            "agreement": versus_tests(self.kept).to_json(),
            "flips": None if flips is None else flips.to_json(),
            "invariance": {probe: f.to_json() for probe, f in invariance(self.kept).items()},
            "panel": {model: m.to_json() for model, m in panel(self.kept).items()},
        }


_NO_FIGURES: dict[str, Any] = {
    "agreement": {
        "match_pass": 0,
        "match_fail": 0,
        "mismatch_pass": 0,
        "mismatch_fail": 0,
        "n": 0,
        "kappa": None,
        "kappa_ci": None,
        "pi": None,
        "pi_ci": None,
        "leniency": None,
        "strictness": None,
        "note": "too few items (n=0 < 10)",
    },
    "flips": None,
    "invariance": {},
    "panel": {},
}
""":meth:`_JudgeTally.figures` of no rows, written out so that a run without a judge
never loads :mod:`gradebox.judging` (~10 ms of its start); a test holds the two equal."""


def _for_figures(r: dict[str, Any]) -> dict[str, Any]:
    """The row as the figures read it: its id, whether every case passed, part of its judge."""
    outcomes = r.get("outcomes") or []
    passed = bool(outcomes) and all(o == "ok" for o in outcomes)
    judge = {k: r["judge"][k] for k in _FIGURE_FIELDS if k in r["judge"]}
    if isinstance(judge.get("scores"), dict):
        judge["scores"] = dict.fromkeys(judge["scores"])  # the flip figures read criteria ids
    return {"id": r.get("id"), "outcomes": ["ok"] if passed else [], "judge": judge}


def format_summary(s: dict[str, Any], *, seconds: float, backend: str) -> str:
    """Render the summary for a terminal (one screen)."""
    lines = [
        f"graded {s['samples']} samples in {seconds:.1f}s (isolation: {backend})",
        f"  pass {s['passed']}   fail {s['failed']}   needs_review {s['needs_review']}",
        f"  samples with timeouts {s['with_timeouts']}   with errors {s['with_errors']}   "
        f"with crashes {s['with_crashes']}   infra errors {s['infra_errors']}",
        "  reasons: " + ", ".join(f"{k} {v}" for k, v in s["reasons"].items()),
    ]
    lines += _stage_lines(s)
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


def _stage_lines(s: dict[str, Any]) -> list[str]:
    lines = []
    st = s["static"]
    if st["checked"]:
        found = ", ".join(f"{k} {v}" for k, v in st["findings"].items())
        lines.append(
            f"  static: findings {found}; samples failed by policy {st['policy_fail']}, "
            f"for review {st['policy_review']}; tool errors {st['infra_errors']}"
        )
    j = s["judge"]
    if j["rows"]:
        statuses = ", ".join(f"{k} {j[k]}" for k in _STATUSES)
        line = (
            f"  judge: {statuses}; cache hits {j['cache_hits']}, retries {j['retries']}, "
            f"mismatches {j['mismatches']}"
        )
        agree = j["agreement"]
        if agree["n"]:
            line += (
                f"; vs hidden tests (n={agree['n']}): match/pass {agree['match_pass']}, "
                f"match/fail {agree['match_fail']}, mismatch/pass {agree['mismatch_pass']}, "
                f"mismatch/fail {agree['mismatch_fail']}, " + _figures(agree)
            )
        lines.append(line)
        flips = j.get("flips")
        if flips:
            lines.append("  judge repeats: " + _flip_line(flips))
        for model, m in (j.get("panel") or {}).items():
            agree, versus = m["with_majority"], m["versus_tests"]
            line = f"  judge panel {model}: "
            if agree:
                line += f"with the majority {agree['k']}/{agree['n']}, "
            lines.append(line + f"vs tests kappa {_ci(versus['kappa'], versus['kappa_ci'])}")
        for probe, f in (j.get("invariance") or {}).items():
            shown = ", ".join(f["flipped"][:5]) + (" ..." if len(f["flipped"]) > 5 else "")
            lines.append(
                f"  judge probe {probe}: verdict flipped on {f['k']}/{f['n']} "
                f"{_ci(f['rate'], f['ci'])}" + (f" ({shown})" if shown else "")
            )
    return lines


def _ci(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def _figures(agree: dict[str, Any]) -> str:
    if agree["note"] and agree["kappa"] is None:
        return f"kappa n/a: {agree['note']}"
    text = f"kappa {_ci(agree['kappa'], agree['kappa_ci'])}, pi {_ci(agree['pi'], agree['pi_ci'])}"
    for name in ("leniency", "strictness"):
        r = agree[name]
        if r:
            text += f", {name} {r['k']}/{r['n']} {_ci(r['rate'], r['ci'])}"
    return text


def _flip_line(flips: dict[str, Any]) -> str:
    overall = flips["overall"]
    text = f"{flips['items']} items"
    per_judgement = flips.get("verdict_flip_rate_per_judgement")
    if per_judgement:
        v = per_judgement
        text += (
            f"; verdict flip rate per judgement (minority votes/all votes) "
            f"{v['k']}/{v['n']} {_ci(v['rate'], v['ci'])}"
        )
    if flips["verdict"]:
        v = flips["verdict"]
        text += (
            f"; per item (items whose verdicts disagree/items) "
            f"{v['k']}/{v['n']} {_ci(v['rate'], v['ci'])}"
        )
    text += f"; items with any flip (verdict or a score) {_ci(overall['rate'], overall['ci'])}"
    worst = sorted(flips["criteria"].items(), key=lambda kv: -kv[1]["rate"])[:3]
    if worst:
        text += "; by criterion " + ", ".join(f"{c} {r['rate']:.2f}" for c, r in worst)
    return text
