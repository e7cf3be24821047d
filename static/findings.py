"""The one result type of the static layers, and the error for a broken tool.

Every static layer returns ``list[Finding]`` per candidate. A tool that crashes
or prints something we cannot parse raises :class:`ToolError` (chained from the
cause): the grader records ``infra_error`` for the static stage of that row,
never a finding and never a candidate failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Finding", "Layer", "Severity", "ToolError"]

Layer = Literal["lint", "types", "security", "imports", "diff", "metrics", "claims"]
"""Which static layer produced a finding."""

Severity = Literal["info", "low", "medium", "high"]
"""How bad a finding is; the policy maps severities to verdict effects."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One static finding in one candidate."""

    layer: Layer
    """The layer that found it."""
    rule: str
    """Stable rule id: the tool's own (``F401``, ``B602``, ``arg-type``) or ours (``GBX...``)."""
    severity: Severity
    """How bad it is."""
    line: int
    """1-based line in the candidate's code (0 when not tied to a line)."""
    col: int
    """1-based column (0 when unknown)."""
    message: str
    """A short message; never contains hidden cases or secrets."""


class ToolError(RuntimeError):
    """A static tool failed (crashed, missing, or unparseable output): not the candidate's fault."""
