"""The service's options: one explicit object, built at the CLI boundary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from sandbox.types import Limits
from static.policy import DEFAULT_POLICY, Policy

__all__ = [
    "DEFAULT_DISCLOSURE",
    "DISCLOSURES",
    "JUDGE_MODES",
    "Disclosure",
    "JudgeMode",
    "Layers",
    "ServiceConfig",
]

Disclosure = Literal["cases", "counts", "verdict"]
"""What a grader token sees of a task's hidden cases in its rows (set per task by the admin).

- ``cases``: per-case outcomes (``outcomes``, ``failed``, ``timeouts``) and exact latency;
- ``counts``: only how many cases passed, failed and timed out; latency to 0.1 s;
- ``verdict``: only the verdict and its reason; no latency.
"""
DISCLOSURES: tuple[Disclosure, ...] = ("cases", "counts", "verdict")
"""Every disclosure, most to least."""
DEFAULT_DISCLOSURE: Disclosure = "counts"
"""For a task registered without one. Per-case outcomes let a client that submits
code read a hidden argument a bit per case per submission, so they are the admin's
explicit choice; counts still say how close a candidate came."""


JudgeMode = Literal["wait", "defer", "off"]
"""Per request: judge before answering (``wait``), answer first with ``judge.status:
"pending"`` and judge in the background (``defer``), or not at all (``off``)."""
JUDGE_MODES: tuple[JudgeMode, ...] = get_args(JudgeMode)
"""Every judge mode."""


@dataclass(frozen=True, slots=True)
class Layers:
    """Which layers after the sandbox grade a request's samples (stored with a run)."""

    static: bool
    """Run the static layers (the row's ``static`` is ``null`` without)."""
    judge: JudgeMode
    """Whether and when the judge annotates (the row's ``judge`` is ``null`` when off)."""

    def to_json(self) -> dict[str, object]:
        """As stored with a run."""
        return {"static": self.static, "judge": self.judge}

    @classmethod
    def from_json(cls, value: Mapping[str, object]) -> Layers:
        """Inverse of :meth:`to_json`; a run stored before these options: tests only."""
        default: JudgeMode = "off"
        judge = next((mode for mode in JUDGE_MODES if mode == value.get("judge")), default)
        return cls(static=value.get("static") is True, judge=judge)


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """Everything ``gradebox serve`` can be told; defaults suit one machine."""

    db: Path
    """The SQLite file (created when missing; WAL mode)."""
    isolation: str = "auto"
    """Sandbox isolation: ``auto`` (bwrap or refuse), ``bwrap`` or ``none``."""
    workers: int = 2
    """Sandbox workers: candidates graded at once, batch and synchronous together."""
    sync_reserved_workers: int = 1
    """Sandbox workers batch runs never take, so that a synchronous grade finds one free
    at once (see :mod:`gradebox.service.lanes`); batch keeps at least one."""
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
    body_timeout_s: float = 20.0
    """Longest time to receive a request body (408 after): a slow client holds nothing longer."""
    parse_budget_s: float = 5.0
    """Most CPU time (the parsing thread's own) to parse and check a body, off the event
    loop (413 after; or after four times this of wall time, when starved that long)."""
    front_budget_s: float = 5.0
    """Longest time extract and gate may take for one sample, waiting for a worker
    included (then it is not graded, and a worker still on it is killed)."""
    front_inline_chars: int = 1024
    """Samples whose reply and code hold at most this many characters together are
    extracted and gated in the grading thread, not in a worker: the round trip to a
    worker costs more than their check (0.1 to 0.3 ms for the bundled examples, 3.2 ms
    for the slowest text found at 1 KiB; the check grows with the square of nesting, so
    longer texts go to the workers, where the budget can stop them). 0: every sample
    goes to the workers."""
    front_workers: int = 8
    """Worker processes for extract and gate. Keep it above ``per_token_concurrency``
    so that one token's slow samples never hold every worker."""
    token_queue_runs: int = 8
    """Runs one token may have queued or running (429 above)."""
    token_queue_samples: int = 20_000
    """Ungraded samples one token may have queued (429 above)."""
    rate_per_minute: float = 600.0
    """Samples one token may have graded per minute and task, sustained (0: no limit)."""
    rate_burst: int = 1_000
    """Samples one token may have graded at once per task, before the rate applies (429)."""
    max_code_chars: int = 128 * 1024
    """Longest ``reply`` or ``code`` of a sample (422 above). Extract and gate take
    ~0.3 s at this size, in one of the ``front_workers`` processes."""
    max_row_bytes: int = 64 * 1024
    """Largest result row stored or served; longer free text is cut first."""
    static_sessions: int = 0
    """Warm static sessions (samples checked at once, one mypy worker each, ~2.5 s to
    start); 0 switches the static layers off. ``gradebox serve`` starts 2."""
    static_policy: Policy = DEFAULT_POLICY
    """The static policy of tasks that do not set their own."""
    static_pins: dict[str, str] | None = None
    """Lockfile pins of tasks that do not register a lockfile; ``None``: the installed
    environment stands in, as for ``gradebox grade`` without ``--lockfile``."""
    static_cache: Path | None = None
    """mypy's cache for the sessions; ``None``: a scratch directory per session."""
    static_advisories: Path | None = None
    """An OSV advisory directory or zip for the ``deps`` layer (``GRADEBOX_ADVISORIES``);
    ``None``: the layer is off."""
    judge_default: JudgeMode = "off"
    """The judge mode of a request that names none (the judge costs an outside call)."""
    judge_backlog: int = 10_000
    """Deferred judgements waiting or running at once; past it one is ``unavailable`` at once."""
