"""The service's options: one explicit object, built at the CLI boundary."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sandbox.types import Limits

__all__ = ["ServiceConfig"]


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """Everything ``gradebox serve`` can be told; defaults suit one machine."""

    db: Path
    """The SQLite file (created when missing; WAL mode)."""
    isolation: str = "auto"
    """Sandbox isolation: ``auto`` (bwrap or refuse), ``bwrap`` or ``none``."""
    workers: int = 2
    """Sandbox workers: candidates graded at once, batch and synchronous together."""
    sandbox_python: str | None = None
    """Interpreter that runs candidates (default: the system ``python3``)."""
    limits: Limits = field(default_factory=Limits)
    """Default limits per candidate; a task may lower (never raise) them."""
    queue_size: int = 64
    """Most runs queued or running at once; one more is refused with 429."""
    max_body_bytes: int = 8 * 1024 * 1024
    """Largest request body (413 above)."""
    max_samples_per_run: int = 10_000
    """Most samples in one run (413 above)."""
    max_cases_per_task: int = 1_000
    """Most hidden cases in one task (413 above)."""
    grade_deadline_s: float = 30.0
    """Deadline of one synchronous ``POST /v1/grade`` (504 after it)."""
    per_token_concurrency: int = 4
    """Synchronous grades one token may have in flight (429 above)."""
    max_inflight_grades: int = 32
    """Synchronous grades in flight over all tokens (429 above)."""
    retry_after_s: int = 1
    """``Retry-After`` for a refused synchronous grade."""
    run_retry_after_s: int = 10
    """``Retry-After`` when the run queue is full."""
    shutdown_grace_s: float = 30.0
    """How long shutdown waits for samples in flight before leaving them for resume."""
