"""A real ``gradebox serve`` process for end-to-end tests, started as an operator starts it.

``python -m gradebox.service serve`` on a free port with an admin token, the
environment scrubbed of ``GRADEBOX_``/``OPENAI_`` settings and given ``env``
instead; it is ready when ``/readyz`` answers 200 (polled until a generous
deadline: the sandbox's self-check and warm static tools on a busy machine).
Its stderr (the server's log) is a file the test reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from ports import free_port

__all__ = ["Served", "serve"]


@dataclass(frozen=True)
class Served:
    """A running server."""

    url: str
    admin: dict[str, str]
    """The admin token's ``Authorization`` header."""
    log: Path
    """The server's stderr."""


@contextmanager
def serve(
    tmp: Path, env: Mapping[str, str], *options: str, ready_s: float = 180.0
) -> Iterator[Served]:
    """Run ``gradebox serve`` with ``options`` until the block ends (then SIGTERM)."""
    port, log = free_port(), tmp / "server.log"
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GRADEBOX_", "OPENAI_"))}
    argv = [
        sys.executable, "-m", "gradebox.service", "serve", "--db", str(tmp / "g.sqlite"),
        "--port", str(port), "--admin-token", "--log-level", "debug", "--rate-limit", "0",
        *options,
    ]  # fmt: skip
    with log.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=environ | env)
    try:
        assert proc.stdout is not None
        admin = proc.stdout.readline().decode().split(": ", 1)[1].strip()
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + ready_s
        while True:
            try:
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.1)
        yield Served(url, {"Authorization": f"Bearer {admin}"}, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
