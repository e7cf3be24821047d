"""Where the cluster is: ``local:N`` or a scheduler's ``tcp://`` / ``tls://`` address.

Parsing only: nothing here imports Dask, so ``gradebox grade --help`` and runs
without ``--scheduler`` do not pay for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MAX_LOCAL_WORKERS", "SchedulerAddress", "parse_scheduler"]

MAX_LOCAL_WORKERS = 64
"""Most worker processes ``local:N`` starts."""

_REMOTE = re.compile(r"(tcp|tls)://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:]+\]):([0-9]{1,5})")


@dataclass(frozen=True, slots=True)
class SchedulerAddress:
    """A parsed ``--scheduler`` value."""

    local_workers: int | None
    """``N`` of ``local:N`` (a cluster this process starts and stops), else ``None``."""
    address: str | None
    """The scheduler's address (``tcp://HOST:PORT`` or ``tls://HOST:PORT``), else ``None``."""

    @property
    def tls(self) -> bool:
        """The connection is TLS (``tls://``, and every ``local:N`` cluster)."""
        return self.address is None or self.address.startswith("tls://")


def parse_scheduler(text: str) -> SchedulerAddress:
    """Parse ``local:N``, ``tcp://HOST:PORT`` or ``tls://HOST:PORT``.

    Raises:
        ValueError: Anything else, with what is expected.
    """
    if text.startswith("local:"):
        n = text[len("local:") :]
        if not n.isdigit() or not 1 <= int(n) <= MAX_LOCAL_WORKERS:
            raise ValueError(f"{text!r}: local:N needs N between 1 and {MAX_LOCAL_WORKERS}")
        return SchedulerAddress(int(n), None)
    m = _REMOTE.fullmatch(text)
    if m is None or not 0 < int(m.group(3)) < 65536:
        raise ValueError(f"{text!r} is not local:N, tcp://HOST:PORT or tls://HOST:PORT")
    return SchedulerAddress(None, text)
