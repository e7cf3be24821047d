"""Exceptions of the sandbox layer.

::

    SandboxError                 base; never raised itself
    ├── InputError               bad hidden/public file lines (raised by cases.load_*;
    │                            caught by the CLI, exit 2). Carries every problem
    │                            as ``file:line: what is wrong``.
    ├── IsolationUnavailable     the configured isolation cannot be provided or its
    │                            self-check failed (raised by open_sandbox; caught by
    │                            the CLI and the service, exit 2 / not ready). The
    │                            sandbox fails closed: nothing runs.
    └── WorkerError              a worker broke for a reason that is not the
                                 candidate's (raised inside the pool; becomes an
                                 ``infra_error`` on the row).
"""

from __future__ import annotations

__all__ = ["InputError", "IsolationUnavailable", "SandboxError", "WorkerError"]


class SandboxError(Exception):
    """Base class of every sandbox-layer error."""


class InputError(SandboxError):
    """One or more input lines are bad; ``problems`` lists ``file:line: what``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        shown = "\n".join(self.problems[:20])
        more = len(self.problems) - 20
        super().__init__(shown + (f"\n... and {more} more" if more > 0 else ""))


class IsolationUnavailable(SandboxError):
    """The sandbox cannot isolate as configured; the message says how to fix it."""


class WorkerError(SandboxError):
    """A sandbox worker failed for a reason that is not the candidate's."""
