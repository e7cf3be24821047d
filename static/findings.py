"""The one result type of the static layers, and the error for a broken tool.

Every static layer returns ``list[Finding]`` per candidate. A tool that crashes
or prints something we cannot parse raises :class:`ToolError` (chained from the
cause): the grader records ``infra_error`` for the static stage of that row,
never a finding and never a candidate failure. A tool that ran but failed on
some of its files raises :class:`FileErrors`, which carries the good results of
the others::

    RuntimeError
    └── ToolError        raised by a layer's check(); caught by static.batch
        └── FileErrors   the same, for some files only; static.batch keeps the rest
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["FileErrors", "Finding", "Layer", "Severity", "ToolError"]

Layer = Literal["lint", "types", "security", "imports", "diff", "metrics", "claims", "deps"]
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
    refs: tuple[str, ...] = ()
    """What the finding is about beyond its rule: an advisory's id, then its aliases
    (``deps`` layer); policy selectors match these as they match the rule."""


class ToolError(RuntimeError):
    """A static tool failed (crashed, missing, or unparseable output): not the candidate's fault."""


class FileErrors(ToolError):
    """A tool ran but failed on some files; the findings of the others stand."""

    def __init__(self, found: dict[Path, list[Finding]], failed: dict[Path, str]) -> None:
        """Keep both halves of the run.

        Args:
            found: Findings of every file the tool handled (possibly none).
            failed: What went wrong, for each file the tool failed on (at least one).
        """
        shown = "; ".join(sorted(set(failed.values())))[:500]
        super().__init__(f"{len(failed)} file(s) failed: {shown}")
        self.found = found
        """Findings per file the tool handled."""
        self.failed = failed
        """What went wrong, per file the tool failed on."""
