"""The mining report: commits seen and kept, why the others were dropped, the validation.

:func:`report` is the one place ``report.json`` is built; :func:`summary_line`
says the same in one line for stderr.
"""

from __future__ import annotations

from collections.abc import Sequence

from gradebox.grade import Json
from gradebox.mine.model import DROP_REASONS, MineConfig, Outcome

__all__ = ["report", "summary_line"]


def report(config: MineConfig, outcomes: Sequence[Outcome], total_s: float) -> dict[str, Json]:
    """``report.json``: counts, validation agreement, timing, and every commit's entry."""
    kept = [o for o in outcomes if o.kept]
    mine_s = round(sum(o.mine_s for o in outcomes), 3)
    validate_s = round(sum(o.validate_s for o in outcomes), 3)
    return {
        "repo": str(config.repo),
        "repo_name": config.repo_name,
        "rev_range": config.rev_range,
        "settings": {
            "max_instances": config.max_instances,
            "runs": config.runs,
            "validate": config.validate,
            "max_lines": config.max_lines,
            "max_files": config.max_files,
            "timeout_s": config.limits.timeout_s,
        },
        "commits_seen": len(outcomes),
        "kept": len(kept),
        "dropped": dropped(outcomes),
        "validation": validation(outcomes) if config.validate else None,
        "timing": {
            "total_s": round(total_s, 3),
            "mine_s": mine_s,
            "validate_s": validate_s,
            "per_kept_instance_s": round(total_s / len(kept), 3) if kept else None,
            "per_validated_instance_s": _per_validated(outcomes),
        },
        "commits": [o.to_json() for o in outcomes],
    }


def dropped(outcomes: Sequence[Outcome]) -> dict[str, Json]:
    """Every drop reason with its count (zeros included, in check order)."""
    return {r: sum(o.reason == r for o in outcomes) for r in DROP_REASONS}


def validation(outcomes: Sequence[Outcome]) -> dict[str, Json]:
    """How often the gate agreed, over every instance that reached validation."""
    checked = [o.validation for o in outcomes if o.validation is not None]
    return {
        "instances": len(checked),
        "agree": sum(v.agrees for v in checked),
        "gold_resolved": sum(v.gold.resolved for v in checked),
        "gold_pass": sum(v.gold.verdict == "pass" for v in checked),
        "noop_resolved": sum(v.noop.resolved for v in checked),
        "reversed_resolved": sum(v.reversed.resolved for v in checked),
    }


def _per_validated(outcomes: Sequence[Outcome]) -> float | None:
    checked = [o for o in outcomes if o.validation is not None]
    if not checked:
        return None
    return round(sum(o.mine_s + o.validate_s for o in checked) / len(checked), 3)


def summary_line(config: MineConfig, outcomes: Sequence[Outcome], total_s: float) -> str:
    """The report in one line."""
    kept = sum(o.kept for o in outcomes)
    counts = {r: n for r, n in dropped(outcomes).items() if n}
    why = ", ".join(f"{r} {n}" for r, n in counts.items()) or "none"
    line = f"{len(outcomes)} commit(s) seen, {kept} kept; dropped: {why}"
    if config.validate:
        v = validation(outcomes)
        n = v["instances"]
        line += (
            f"; validation over {n}: gold resolved {v['gold_resolved']}/{n}, "
            f"no-op resolved {v['noop_resolved']}/{n}, reversed resolved "
            f"{v['reversed_resolved']}/{n}"
        )
    line += f"; {total_s:.1f} s"
    if kept:
        line += f" ({total_s / kept:.1f} s per kept instance)"
    return line
