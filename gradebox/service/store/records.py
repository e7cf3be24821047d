"""The service store's records: what :class:`~gradebox.service.store.Store` reads and returns."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "QuotaExceeded",
    "RubricPin",
    "RunInfo",
    "RunStatus",
    "StoredTask",
    "TokenInfo",
    "TokenRecord",
    "iso_time",
]

RunStatus = Literal["queued", "running", "done", "cancelled"]
"""A run's life: queued -> running -> done, or cancelled from either."""


class QuotaExceeded(Exception):
    """A run would take its token past a queue quota; raised by :meth:`Store.add_run`."""


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A stored token: never the token itself, only its hash."""

    id: str
    """The public part of the token (``gbx_<id>_<secret>``)."""
    role: Literal["admin", "grader"]
    """What the token may do."""
    hash: str
    """``sha256`` of the whole token, hex."""
    expires: float | None = None
    """When it stops working (Unix time); ``None``: never."""
    tasks: frozenset[str] | None = None
    """The tasks it may grade; ``None``: every task."""


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """What ``gradebox token list`` and ``GET /v1/tokens`` show: never a secret or a hash."""

    id: str
    """The public part of the token."""
    role: Literal["admin", "grader"]
    """What the token may do."""
    created: float
    """When it was created (Unix time)."""
    expires: float | None
    """When it stops working (Unix time); ``None``: never."""
    tasks: tuple[str, ...] | None
    """The tasks it may grade, sorted; ``None``: every task."""

    def to_json(self) -> dict[str, Any]:
        """As the admin API and ``--json`` show it (times as ISO 8601 UTC)."""
        return {
            "id": self.id,
            "role": self.role,
            "created": iso_time(self.created),
            "expires": None if self.expires is None else iso_time(self.expires),
            "tasks": None if self.tasks is None else list(self.tasks),
        }


def iso_time(when: float) -> str:
    """Unix time as ``2026-12-01T22:25:10Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


@dataclass(frozen=True, slots=True)
class StoredTask:
    """A task as stored; ``hidden`` is for the grader only."""

    task: str
    """The task's id."""
    public: dict[str, Any]
    """The public description (a ``public.jsonl`` line; its ``fn`` is the entry point)."""
    hidden: list[dict[str, Any]]
    """The hidden cases (``hidden.jsonl`` lines): write-only, never served."""
    limits: dict[str, Any]
    """Overrides of the server's default limits."""
    revision: int
    """Increases each time the task is replaced."""
    updated: float
    """When it was last written (Unix time)."""
    disclosure: str = "counts"
    """What grader tokens see of the hidden cases (``cases``, ``counts``, ``verdict``)."""
    static: dict[str, Any] = field(default_factory=dict)
    """The task's static settings (policy, allowed rules, lockfile); empty: the server's."""


@dataclass(frozen=True, slots=True)
class RubricPin:
    """The rubric a run's task is judged with, fixed when the run was submitted."""

    name: str
    """The rubric's name (the task's ``public.rubric``)."""
    revision: int
    """The stored rubric's revision then; ``0`` for a built-in one (they never change)."""
    digest: str | None
    """SHA-256 of the snapshot's texts; ``None`` for a built-in rubric (loaded by name)."""
    texts: dict[str, str] = field(default_factory=dict)
    """The rubric and everything it includes, by name, as TOML (empty when read back)."""


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A run's status, without its samples."""

    id: str
    """The run id."""
    owner: str
    """The id of the token that submitted it."""
    status: RunStatus
    """Where it is in its life."""
    created: float
    """When it was submitted (Unix time)."""
    finished: float | None
    """When it finished or was cancelled."""
    total: int
    """Samples in the run."""
    done: int
    """Samples with a result."""
    reason: str | None = None
    """Why it was cancelled (``cancelled on request``, ``token revoked``, ``token expired``)."""
