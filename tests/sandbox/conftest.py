"""Fixtures for the sandbox conformance suite (``test_conformance.py``).

The suite runs every attack in ``attacks/`` against every isolation backend
(``sandbox_backend``). A backend's known failures are declared on each test with
a ``known_failure(backend, reason=..., run=...)`` mark; the hook below turns it
into ``xfail(strict=True)`` for that backend's parametrization only (an
unexpected pass fails the suite), or into a ``run=False`` xfail for attacks
that would harm the machine when nothing isolates them.

The sandbox fixtures read their ``Limits`` from the test module's ``LIMITS``.
The other fixtures are host-side places and servers that a candidate must not
reach: world-writable dirs, stand-in grader processes, TCP/UDP/Unix listeners.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from sandbox.types import Limits

BACKENDS = ("bwrap", "none")
ATTACKS = Path(__file__).parent / "attacks"


# --------------------------------------------------------------------- markers


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "known_failure(backend, reason, run=True): strict xfail for one sandbox backend",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("sandbox_backend") if callspec else None
        for mark in item.iter_markers("known_failure"):
            if backend is not None and mark.args[0] == backend:
                item.add_marker(
                    pytest.mark.xfail(
                        strict=True,
                        run=mark.kwargs.get("run", True),
                        reason=f"known failure of the {backend!r} backend: {mark.kwargs['reason']}",
                    )
                )


# -------------------------------------------------------------------- sandboxes


@pytest.fixture(scope="session", params=BACKENDS)
def sandbox_backend(request: pytest.FixtureRequest) -> str:
    """The isolation backend under test."""
    name: str = request.param
    if name == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (CI installs it: apt-get install -y bubblewrap)")
    return name


def _limits(request: pytest.FixtureRequest) -> Limits:
    limits = getattr(request.module, "LIMITS", None)
    assert isinstance(limits, Limits), "the test module must define LIMITS = Limits(...)"
    return limits


def _open(backend: str, limits: Limits) -> Any:
    from sandbox.runner import open_sandbox  # the runtime under test; only needed here

    sb = open_sandbox(isolation=backend, limits=limits, workers=1)
    assert sb.backend == backend, f"asked for {backend!r}, got {sb.backend!r}"
    return sb


def _close_bounded(sb: Any, limit_s: float = 15.0) -> None:
    t = threading.Thread(target=sb.close, daemon=True)
    t.start()
    t.join(limit_s)
    assert not t.is_alive(), f"Sandbox.close() did not return within {limit_s} s"


class _Holder:
    """Keeps one warm sandbox per backend; replaces it once a test marks it broken.

    A test that finds the grader hung or raising sets ``sb.conformance_broken``,
    so one runtime bug fails one test instead of every later test in the module.
    """

    def __init__(self, backend: str, limits: Limits) -> None:
        self.backend = backend
        self.limits = limits
        self.sb: Any = None

    def get(self) -> Any:
        if self.sb is not None and getattr(self.sb, "conformance_broken", False):
            threading.Thread(target=self.sb.close, daemon=True).start()  # may never return
            self.sb = None
        if self.sb is None:
            self.sb = _open(self.backend, self.limits)
        return self.sb

    def close(self) -> None:
        if self.sb is not None and not getattr(self.sb, "conformance_broken", False):
            _close_bounded(self.sb)


@pytest.fixture(scope="module")
def _sandbox_holder(request: pytest.FixtureRequest, sandbox_backend: str) -> Iterator[_Holder]:
    holder = _Holder(sandbox_backend, _limits(request))
    yield holder
    holder.close()


@pytest.fixture
def shared_sandbox(_sandbox_holder: _Holder) -> Any:
    """The warm sandbox of this backend (one worker), reused from test to test.

    Consecutive runs within a test go to the same worker, as they do for
    consecutive candidates in a real grading run.
    """
    return _sandbox_holder.get()


@pytest.fixture
def fresh_sandbox(
    request: pytest.FixtureRequest,
    sandbox_backend: str,
) -> Iterator[Callable[..., Any]]:
    """Factory for a private sandbox (for tests that kill workers or change the env).

    Call it with ``Limits`` field overrides: ``fresh_sandbox(candidate_timeout_s=1.5)``.
    """
    opened: list[Any] = []

    def make(**overrides: Any) -> Any:
        sb = _open(sandbox_backend, replace(_limits(request), **overrides))
        opened.append(sb)
        return sb

    yield make
    for sb in opened:
        _close_bounded(sb)


# ------------------------------------------------------------------ host places


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A world-writable dir under the host's /tmp: only isolation keeps a candidate out."""
    d = Path(tempfile.mkdtemp(prefix="gbx-conformance-", dir="/tmp"))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def repo_dir() -> Iterator[Path]:
    """A world-writable dir inside the repository (where real hidden.jsonl files live)."""
    d = Path(tempfile.mkdtemp(prefix=".tmp-conformance-", dir=ATTACKS))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def decoy_grader() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start stand-ins for the grader: host processes holding secrets in argv and env.

    A real grader is started with ``--hidden PATH`` on its command line and API
    keys in its environment; these stand-ins make both visible in the host's
    ``/proc`` exactly as the real one would be.
    """
    procs: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        p = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)", *argv],
            env={**os.environ, **(env or {})},
        )
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.kill()
        p.wait()


# -------------------------------------------------------------------- listeners


@dataclass
class Listeners:
    """Servers the test runs on the host; they record whatever reaches them."""

    targets: dict[str, Any]
    received: list[str]


def _non_loopback(family: int, probes: list[str]) -> list[str]:
    """The host's own address on the route to each probe (no packet is sent)."""
    found = []
    for probe in probes:
        s = socket.socket(family, socket.SOCK_DGRAM)
        try:
            s.connect((probe, 53))
            addr = str(s.getsockname()[0])
        except OSError:
            continue
        finally:
            s.close()
        if not addr.startswith(("127.", "::1", "fe80:")) and addr not in found:
            found.append(addr)
    return found


def _resolvers() -> list[str]:
    out = []
    try:
        text = Path("/etc/resolv.conf").read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver":
            out.append(parts[1])
    return out


class _Servers:
    """Listening sockets, each served by a thread that records what reaches it."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.socks: list[socket.socket] = []
        self.stop = threading.Event()

    def add(self, family: int, kind: int, addr: Any, label: str) -> socket.socket | None:
        try:
            s = socket.socket(family, kind)
            s.bind(addr)
        except OSError:
            return None
        stream = kind == socket.SOCK_STREAM
        if stream:
            s.listen(16)
        self.socks.append(s)
        threading.Thread(target=self._serve, args=(s, label, stream), daemon=True).start()
        return s

    def _serve(self, sock: socket.socket, label: str, stream: bool) -> None:
        sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                if stream:
                    conn, _ = sock.accept()
                    self.received.append(f"{label}: connection")
                    conn.close()
                else:
                    data, _ = sock.recvfrom(4096)
                    self.received.append(f"{label}: datagram {data[:40]!r}")
            except OSError:  # timeouts included
                continue

    def close(self) -> None:
        self.stop.set()
        for s in self.socks:
            s.close()


@pytest.fixture
def listeners(host_dir: Path, repo_dir: Path) -> Iterator[Listeners]:
    """TCP, UDP and Unix-socket servers on every host address the test can bind."""
    servers = _Servers()
    targets: dict[str, Any] = {
        "tcp4": [],
        "tcp6": [],
        "udp4": [],
        "udp6": [],
        "unix_paths": [],
        "resolvers": _resolvers(),
    }
    hosts4 = ["127.0.0.1", *_non_loopback(socket.AF_INET, ["192.0.2.1", "10.0.0.1", "8.8.8.8"])]
    hosts6 = ["::1", *_non_loopback(socket.AF_INET6, ["fd00::1", "2001:4860:4860::8888"])]
    for fam, hosts, suffix in ((socket.AF_INET, hosts4, "4"), (socket.AF_INET6, hosts6, "6")):
        for h in hosts:
            for kind, proto in ((socket.SOCK_STREAM, "tcp"), (socket.SOCK_DGRAM, "udp")):
                s = servers.add(fam, kind, (h, 0), f"{proto}{suffix} {h}")
                if s is not None:
                    targets[proto + suffix].append([h, s.getsockname()[1]])
    targets["abstract"] = "gbx-conformance-" + secrets.token_hex(8)
    servers.add(socket.AF_UNIX, socket.SOCK_STREAM, "\0" + targets["abstract"], "unix abstract")
    for d in (host_dir, repo_dir):
        path = str(d / "s.sock")
        if servers.add(socket.AF_UNIX, socket.SOCK_STREAM, path, f"unix {path}") is not None:
            os.chmod(path, 0o777)  # only isolation, not permissions, keeps a candidate out
            targets["unix_paths"].append(path)
    yield Listeners(targets, servers.received)
    servers.close()
