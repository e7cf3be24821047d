"""A run's summary and the diff of two runs, over the rows a token may see (the CLI's own)."""

from __future__ import annotations

from typing import Any

from gradebox.runs.diff import diff_runs
from gradebox.runs.summary import summarize
from gradebox.service.rows import JsonObject, Row

__all__ = ["diff", "summary"]

_PER_CASE_SUMMARY = ("with_timeouts", "with_errors", "with_crashes")


def summary(rows: list[Row]) -> JsonObject | None:
    """``gradebox grade``'s summary of ``rows`` (``None`` for none).

    Where some rows withhold their cases, verdicts only, and the per-case counts null.
    """
    if not rows:
        return None
    if all("outcomes" in r for r in rows):
        return summarize(rows)
    blank: Row = {"outcomes": [], "timeouts": []}
    return summarize([blank | r for r in rows]) | dict.fromkeys(_PER_CASE_SUMMARY)


def diff(old: list[Row], new: list[Row]) -> JsonObject:
    """``gradebox diff``'s comparison of two runs' rows."""
    result: dict[str, Any] = diff_runs(old, new).to_json()
    return result
