"""Diff size: how much of the original file a patch rewrites, and whether it had to.

When a sample carries the file it was asked to change (``"original"``), the
candidate is compared with it line by line (:mod:`difflib`, line endings
included, so a CRLF rewrite counts):

- ``unchanged``: lines kept verbatim;
- ``changed``: lines rewritten in place (the overlap of a replaced block);
- ``removed`` / ``added``: the rest of deleted / inserted blocks;
- ``first_changed_line``: 1-based line of the candidate where the first
  difference starts (0 when identical), where a ``GBX201`` finding points;
- ``rewritten_ratio``: ``1 - unchanged / max(original_lines, lines)``, the share
  of the larger version that is not kept verbatim (0.0 = identical, 1.0 = nothing
  kept);
- ``normalized_changed_lines`` / ``normalized_ratio``: the same after
  normalising both versions with ``ast.unparse`` (formatting, comments, quote
  style and redundant parentheses removed): how much the *code* changed.
  ``None`` when either version does not parse.

Rule ``GBX201`` (low) flags a patch that rewrites most of a file to change
little: the larger version has at least ``min_lines`` lines (default 10),
``rewritten_ratio > max_rewritten`` (default 0.5), and ``normalized_ratio <=
max_normalized`` (default 0.2). A large rewrite that really changes most of the
code is not flagged by ``GBX201``; neither is any file that does not parse,
since its real change cannot be measured.

Rule ``GBX202`` (low) flags a rewrite whatever it changes: the larger version
has at least ``min_lines`` lines and ``rewritten_ratio > max_rewrite`` (default
0.6), and ``GBX201`` did not fire. Reviewers reject rewrites that did not need
to be rewrites even when the code really changed (a 90% rewrite of a 40-line
function to change one behaviour); the patch gate applies the same rule per
file. A task whose point is a rewrite raises ``max_rewrite`` to 1.0.

This module uses only the standard library and imports no other layer.
"""

from __future__ import annotations

import ast
import difflib
import warnings
from typing import Any

from static.findings import Finding

__all__ = ["check"]


def check(
    code: str,
    original: str | None,
    *,
    min_lines: int = 10,
    max_rewritten: float = 0.5,
    max_normalized: float = 0.2,
    max_rewrite: float = 0.6,
) -> tuple[dict[str, Any], list[Finding]]:
    """Measure the patch from ``original`` to ``code`` and flag gratuitous rewrites.

    Args:
        code: The candidate's file.
        original: The file the candidate was asked to change, or ``None`` when
            the sample carries none (then nothing is measured).
        min_lines: Smallest file (the larger of the two versions) that can be flagged.
        max_rewritten: ``rewritten_ratio`` above this is a rewrite.
        max_normalized: ``normalized_ratio`` at or below this is a small change.
        max_rewrite: ``rewritten_ratio`` above this is ``GBX202`` whatever changed.

    Returns:
        The metrics (``{}`` without an original) and a ``GBX201`` or ``GBX202`` finding, or none.
    """
    if original is None:
        return {}, []
    old, new = original.splitlines(keepends=True), code.splitlines(keepends=True)
    counts = _line_counts(old, new)
    normalized = _normalized_lines(original), _normalized_lines(code)
    metrics: dict[str, Any] = {
        "original_lines": len(old),
        "lines": len(new),
        **counts,
        "rewritten_ratio": _ratio(counts["unchanged"], len(old), len(new)),
        "normalized_changed_lines": None,
        "normalized_ratio": None,
    }
    if normalized[0] is not None and normalized[1] is not None:
        a, b = normalized[0], normalized[1]
        kept = _line_counts(a, b)["unchanged"]
        metrics["normalized_changed_lines"] = max(len(a), len(b)) - kept
        metrics["normalized_ratio"] = _ratio(kept, len(a), len(b))
    found = _findings(metrics, min_lines, max_rewritten, max_normalized)
    return metrics, found or _rewrite(metrics, min_lines, max_rewrite)


def _line_counts(old: list[str], new: list[str]) -> dict[str, int]:
    counts = {"added": 0, "removed": 0, "changed": 0, "unchanged": 0, "first_changed_line": 0}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        before, after = i2 - i1, j2 - j1
        if tag != "equal" and not counts["first_changed_line"]:
            counts["first_changed_line"] = min(j1 + 1, max(len(new), 1))
        if tag == "equal":
            counts["unchanged"] += before
        elif tag == "replace":
            counts["changed"] += min(before, after)
            counts["removed"] += max(before - after, 0)
            counts["added"] += max(after - before, 0)
        elif tag == "delete":
            counts["removed"] += before
        else:
            counts["added"] += after
    return counts


def _ratio(unchanged: int, old: int, new: int) -> float:
    larger = max(old, new)
    return 0.0 if larger == 0 else round(1 - unchanged / larger, 4)


def _normalized_lines(source: str) -> list[str] | None:
    # Parsing can warn (invalid escapes); a library must not print.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.unparse(ast.parse(source)).splitlines()
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _findings(
    metrics: dict[str, Any], min_lines: int, max_rewritten: float, max_normalized: float
) -> list[Finding]:
    size = max(metrics["original_lines"], metrics["lines"])
    rewritten, normalized = metrics["rewritten_ratio"], metrics["normalized_ratio"]
    if size < min_lines or rewritten <= max_rewritten or normalized is None:
        return []
    if normalized > max_normalized:
        return []
    touched = size - metrics["unchanged"]
    message = (
        f"patch rewrites {rewritten:.0%} of a {size}-line file ({touched} lines) but changes "
        f"{metrics['normalized_changed_lines']} line(s) of code once formatting is normalised: "
        "keep unrelated lines as they were"
    )
    return [Finding("diff", "GBX201", "low", metrics["first_changed_line"], 0, message)]


def _rewrite(metrics: dict[str, Any], min_lines: int, max_rewrite: float) -> list[Finding]:
    size = max(metrics["original_lines"], metrics["lines"])
    if size < min_lines or metrics["rewritten_ratio"] <= max_rewrite:
        return []
    message = (
        f"patch rewrites {metrics['rewritten_ratio']:.0%} of a {size}-line file "
        f"({size - metrics['unchanged']} lines): change what the task needs and keep the rest"
    )
    return [Finding("diff", "GBX202", "low", metrics["first_changed_line"], 0, message)]
