"""Result rows on their way out: fixed infra messages, size caps, and each task's disclosure.

Rows are stored as graded (capped, with fixed infra messages) and carry the
disclosure of their task at grading time (``"disclosure"``). What a grader
token is shown is :func:`shown`: per-case fields only under ``cases``, counts
under ``counts``, the verdict alone under ``verdict``. Admins see stored rows.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from gradebox.grade import MAX_TEXT
from gradebox.service.config import Disclosure

__all__ = ["INFRA_MESSAGE", "JsonObject", "Row", "cap_row", "public_infra", "shown"]

Row = dict[str, Any]
"""A graded sample as JSON (:meth:`gradebox.grade.Grade.to_row`), as stored and served."""
JsonObject = dict[str, object]
"""A JSON object made for a response or a file: written, never read back by key."""

_log = logging.getLogger("gradebox.service")

INFRA_MESSAGE = "sandbox infrastructure error; the sample was not graded"
"""What a client reads of any infrastructure failure (the cause goes to the server log)."""

_PER_CASE = ("failed", "timeouts", "outcomes", "explain", "counterexample")
_BULKY = ("static", "judge", "explain", "counterexample", "failed", "timeouts", "outcomes")


def public_infra(row: dict[str, Any], where: str) -> dict[str, object]:
    """Replace a row's infra message by :data:`INFRA_MESSAGE`; log the real one, bounded."""
    message = row.get("infra_error")
    if message:
        text = "".join(c if c.isprintable() else "?" for c in str(message)[:MAX_TEXT])
        _log.warning("%s: sample %.80r: infrastructure error: %s", where, row.get("id"), text)
        row["infra_error"] = INFRA_MESSAGE
    return row


def cap_row(row: dict[str, Any], max_bytes: int) -> dict[str, object]:
    """Cut free text to :data:`~gradebox.grade.MAX_TEXT` and keep the row under ``max_bytes``.

    A row still too large (it cannot be, with the server's case limit, but the cap
    must hold whatever changes) loses its per-case lists and says ``truncated``.
    """
    for key, value in list(row.items()):
        if isinstance(value, str) and len(value) > MAX_TEXT:
            row[key] = value[:MAX_TEXT]
    if _size(row) <= max_bytes:
        return row
    for key in _BULKY:
        if row.get(key):
            row[key] = None
            row["truncated"] = True
            if _size(row) <= max_bytes:
                return row
    kept = ("id", "task", "fn", "pass", "verdict", "reason")
    return {k: row.get(k) for k in kept if k in row} | {"truncated": True}


def shown(row: dict[str, Any], *, admin: bool) -> dict[str, object]:
    """The row as the client may see it: all of it for an admin, else by its disclosure."""
    if admin:
        return row
    level: Disclosure = row.get("disclosure", "verdict")
    if level == "cases":
        return row
    out = {k: v for k, v in row.items() if k not in _PER_CASE}
    outcomes = row.get("outcomes") or []
    latency = row.get("latency_ms")
    if level == "counts":
        ok, timeouts = outcomes.count("ok"), outcomes.count("timeout")
        out["counts"] = {
            "passed": ok,
            "failed": len(outcomes) - ok - timeouts,
            "timed_out": timeouts,
        }
        out["latency_ms"] = _coarse(latency)
    else:
        out["latency_ms"] = None
        out.pop("caps_hit", None)  # whether a cap was hit can depend on the hidden arguments
    return out


def _coarse(latency: object) -> float | None:
    """Latency rounded up to the next 100 ms."""
    if not isinstance(latency, int | float):
        return None
    return float(math.ceil(latency / 100) * 100)


def _size(row: dict[str, Any]) -> int:
    return len(json.dumps(row, ensure_ascii=False).encode("utf-8"))
