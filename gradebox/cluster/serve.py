"""``gradebox serve --scheduler``: the service's sandbox is a Dask cluster.

The service keeps everything it does today (SQLite as its durable queue, lanes,
disclosure, static layers and judge in its own process); only the hidden cases
run on the cluster's workers, through the same :class:`~gradebox.cluster.coordinator.ClusterSandbox`
as ``gradebox grade --scheduler``. A restart resumes unfinished runs from SQLite
as without a cluster.
"""

from __future__ import annotations

import logging
from typing import Protocol

from gradebox.cluster.address import parse_scheduler
from gradebox.cluster.coordinator import ClusterOptions, ClusterSandbox, open_cluster
from gradebox.errors import BadInput, SetupError
from sandbox.errors import IsolationUnavailable
from sandbox.types import Limits

__all__ = ["SandboxSettings", "open_service_cluster"]

_log = logging.getLogger("gradebox.cluster")


class SandboxSettings(Protocol):
    """What the service's configuration says about its sandbox (``ServiceConfig`` has it)."""

    @property
    def isolation(self) -> str:
        """``auto``, ``bwrap`` or ``none``: workers must have proven it."""
        ...

    @property
    def limits(self) -> Limits:
        """The service's limits."""
        ...

    @property
    def workers(self) -> int:
        """Sandbox slots per ``local:N`` worker."""
        ...

    @property
    def sandbox_python(self) -> str | None:
        """``local:N`` workers' candidate interpreter."""
        ...


def open_service_cluster(scheduler: str, settings: SandboxSettings) -> ClusterSandbox:
    """The cluster ``--scheduler`` names, with workers that proved their sandbox.

    Args:
        scheduler: ``local:N``, ``tcp://HOST:PORT`` or ``tls://HOST:PORT``.
        settings: The service's isolation, limits, slots and interpreter.

    Raises:
        BadInput: ``scheduler`` is malformed.
        SetupError: No scheduler, or no worker with a proven sandbox.
    """
    s = settings
    try:
        address = parse_scheduler(scheduler)
    except ValueError as exc:
        raise BadInput([f"--scheduler: {exc}"]) from exc
    if address.address is not None and not address.tls:
        _log.warning(
            "tcp:// is unauthenticated: anyone who can reach the scheduler can run code on "
            "its workers and read task sets (use tls://)"
        )
    try:
        options = ClusterOptions(address, s.isolation, s.limits, s.workers, s.sandbox_python)
        return open_cluster(options)
    except IsolationUnavailable as exc:
        raise SetupError(str(exc)) from exc
