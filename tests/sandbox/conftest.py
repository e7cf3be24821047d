"""Fixtures and host-side probes for the sandbox conformance suite.

The suite (``test_conformance.py``) runs every attack in ``attacks/`` against
every isolation backend. A backend's known failures are declared next to each
test with :func:`known_failure`, which becomes a strict ``xfail`` for that
backend only (an unexpected pass shows up as a failure), or a ``run=False``
xfail for attacks that would harm the machine when nothing isolates them.

Everything here observes from the host: which processes carry a marker, what
files appeared, what the test's servers received.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from sandbox.cases import resolve_error_name
from sandbox.compare import judge_case
from sandbox.types import HiddenCase, Limits, RunResult, make_case

BACKENDS = ("bwrap", "none")
ATTACKS = Path(__file__).parent / "attacks"
REPO = Path(__file__).resolve().parents[2]

LIMITS = Limits(case_timeout_s=1.0, candidate_timeout_s=5.0, memory_mb=512)
"""Small limits keep the suite fast; every bound below is derived from them."""
CASE_GRACE_S = 1.0
"""Allowed beyond a case limit: kill the tree, reap it, start a fresh child."""
WORKER_GRACE_S = 4.0
"""Allowed beyond a candidate limit when the worker itself is stopped or dead
(the runner's own grace is 3 s, plus killing and restarting the worker)."""
HONEST = "def f(x):\n    return x + 1\n"


# --------------------------------------------------------------------- markers


def known_failure(backend: str, reason: str, *, run: bool = True) -> pytest.MarkDecorator:
    """Declare that ``backend`` is known to fail this test, and why.

    Becomes ``xfail(strict=True)`` for that backend's parametrization only; with
    ``run=False`` the test is not even started there (used where the attack
    would damage the host when nothing isolates it).
    """
    return pytest.mark.known_failure(backend, reason=reason, run=run)


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
                item.add_marker(pytest.mark.xfail(
                    strict=True, run=mark.kwargs.get("run", True),
                    reason=f"known failure of the {backend!r} backend: {mark.kwargs['reason']}",
                ))


# -------------------------------------------------------------------- sandboxes


@pytest.fixture(scope="session", params=BACKENDS)
def sandbox_backend(request: pytest.FixtureRequest) -> str:
    """The isolation backend under test."""
    name: str = request.param
    if name == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (CI installs it: apt-get install -y bubblewrap)")
    return name


def _open(backend: str, limits: Limits) -> Any:
    from sandbox.runner import open_sandbox

    sb = open_sandbox(isolation=backend, limits=limits, workers=1)
    assert sb.backend == backend, f"asked for {backend!r}, got {sb.backend!r}"
    return sb


def _close_bounded(sb: Any, limit_s: float = 15.0) -> None:
    t = threading.Thread(target=sb.close, daemon=True)
    t.start()
    t.join(limit_s)
    assert not t.is_alive(), f"Sandbox.close() did not return within {limit_s} s"


@pytest.fixture(scope="session")
def shared_sandbox(sandbox_backend: str) -> Iterator[Any]:
    """One warm sandbox per backend (one worker, so runs share it), for the session."""
    sb = _open(sandbox_backend, LIMITS)
    yield sb
    _close_bounded(sb)


@pytest.fixture
def fresh_sandbox(sandbox_backend: str) -> Iterator[Callable[..., Any]]:
    """Factory for a private sandbox (for tests that kill workers or change the env).

    Call it with ``Limits`` field overrides: ``fresh_sandbox(candidate_timeout_s=1.5)``.
    """
    opened: list[Any] = []

    def make(**overrides: Any) -> Any:
        sb = _open(sandbox_backend, replace(LIMITS, **overrides))
        opened.append(sb)
        return sb

    yield make
    for sb in opened:
        _close_bounded(sb)


# ---------------------------------------------------------------------- running


def attack(name: str) -> str:
    """The source of ``attacks/<name>.py``: a candidate program."""
    return (ATTACKS / f"{name}.py").read_text(encoding="utf-8")


def error_case(fn: str, *args: Any, error: str, **kw: Any) -> HiddenCase:
    """A case that expects an exception, its name canonical as the case loader makes it."""
    return make_case(fn, *args, error=resolve_error_name(error), **kw)


def run_bounded(
    sb: Any, code: str, cases: list[HiddenCase], *, fn: str = "f",
    limit_s: float | None = None, limits: Limits | None = None,
) -> tuple[RunResult, float]:
    """``sb.run`` under a watchdog; returns the result and the host-measured seconds.

    Fails the test (instead of hanging the suite) if ``run`` does not return,
    and fails it if ``run`` raises: the runner must never raise for anything a
    candidate does.
    """
    lim = limits or sb.limits
    bound = limit_s if limit_s is not None else lim.candidate_timeout_s + WORKER_GRACE_S + 10.0
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["res"] = sb.run(code, fn, cases, limits=limits)
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["exc"] = exc

    t0 = time.monotonic()
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(bound)
    elapsed = time.monotonic() - t0
    if t.is_alive():
        pytest.fail(f"Sandbox.run did not return within {bound:.1f} s: the grader hung")
    if "exc" in box:
        exc = box["exc"]
        raise AssertionError(
            f"Sandbox.run raised {type(exc).__name__}: {str(exc)[:300]} (it must return a "
            "RunResult for anything the candidate does)"
        ) from exc
    return box["res"], elapsed


def outcomes(cases: list[HiddenCase], res: RunResult) -> list[str]:
    """The judged outcome of each case."""
    assert len(res.observations) == len(cases), res
    return [judge_case(c, o).outcome for c, o in zip(cases, res.observations, strict=True)]


def assert_still_grades(sb: Any) -> None:
    """The sandbox grades an honest candidate correctly (after whatever came before)."""
    cases = [make_case("f", i, expect=i + 1) for i in range(3)]
    res, elapsed = run_bounded(sb, HONEST, cases)
    assert res.infra_error is None, f"honest candidate got an infra_error: {res.infra_error}"
    assert outcomes(cases, res) == ["ok"] * 3, f"honest candidate not graded ok: {res}"
    assert elapsed < 5.0, f"honest candidate took {elapsed:.1f} s"


def proc_marker() -> str:
    """A unique name that fits in a process's ``comm`` (15 bytes)."""
    return "gbx" + secrets.token_hex(6)


# ---------------------------------------------------------- host-side process probes


def _read(path: str, limit: int = 1 << 16) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit)
    except OSError:
        return b""


def marked_tasks(marker: str) -> list[str]:
    """Every process or thread on the host whose cmdline, comm or environ has the marker."""
    needle = marker.encode()
    me = os.getpid()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        base = f"/proc/{pid}"
        texts = [_read(f"{base}/cmdline"), _read(f"{base}/comm"), _read(f"{base}/environ")]
        try:
            tids = os.listdir(f"{base}/task")
        except OSError:
            tids = []
        hits = [t for t in tids if needle in _read(f"{base}/task/{t}/comm")]
        if hits or any(needle in t for t in texts):
            state = next((ln for ln in _read(f"{base}/status").splitlines()
                          if ln.startswith(b"State:")), b"State: ?")
            cmd = texts[0].replace(b"\0", b" ")[:120].decode("ascii", "replace")
            found.append(f"pid {pid} ({state.decode().split(None, 1)[-1]}) "
                         f"{len(hits)} marked threads: {cmd}")
    return found


def survivors(marker: str, grace_s: float = 0.5) -> list[str]:
    """Marked tasks still present after ``grace_s`` (time to be reaped)."""
    deadline = time.monotonic() + grace_s
    while True:
        left = marked_tasks(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_marked(marker: str) -> None:
    """Clean-up for backends known to let processes escape (never signals the test)."""
    for line in marked_tasks(marker):
        pid = int(line.split()[1])
        with contextlib.suppress(OSError):
            os.kill(pid, 9)


@dataclass
class ProcWatch:
    """Samples the host's ``/proc`` while a run is going, for one marker."""

    marker: str
    peak_tasks: int = 0
    peak_rss_mb: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> ProcWatch:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(5)

    def _loop(self) -> None:
        needle = self.marker.encode()
        while not self._stop.is_set():
            tasks, rss_kb = 0, 0
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    tids = os.listdir(f"/proc/{pid}/task")
                except OSError:
                    continue
                n = sum(needle in _read(f"/proc/{pid}/task/{t}/comm") for t in tids)
                if n or needle in _read(f"/proc/{pid}/cmdline"):
                    tasks += max(n, 1)
                    for ln in _read(f"/proc/{pid}/status").splitlines():
                        if ln.startswith(b"VmRSS:"):
                            rss_kb += int(ln.split()[1])
            self.peak_tasks = max(self.peak_tasks, tasks)
            self.peak_rss_mb = max(self.peak_rss_mb, rss_kb / 1024)
            self._stop.wait(0.02)


def host_rss_mb() -> float:
    """Resident memory of the test process itself."""
    for ln in _read("/proc/self/status").splitlines():
        if ln.startswith(b"VmRSS:"):
            return int(ln.split()[1]) / 1024
    return 0.0


def open_fds() -> int:
    """Descriptors open in the test process."""
    return len(os.listdir("/proc/self/fd"))


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


def _non_loopback(family: int, probe: str) -> str | None:
    s = socket.socket(family, socket.SOCK_DGRAM)
    try:
        s.connect((probe, 53))  # no packet is sent for a UDP connect
        addr = str(s.getsockname()[0])
    except OSError:
        return None
    finally:
        s.close()
    return None if addr.startswith(("127.", "::1")) else addr


def _resolvers() -> list[str]:
    out = []
    for line in _read("/etc/resolv.conf").decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver":
            out.append(parts[1])
    return out


@pytest.fixture
def listeners(host_dir: Path, repo_dir: Path) -> Iterator[Listeners]:
    """TCP, UDP and Unix-socket servers on every host address the test can bind."""
    received: list[str] = []
    socks: list[socket.socket] = []
    stop = threading.Event()
    targets: dict[str, Any] = {"tcp4": [], "tcp6": [], "udp4": [], "udp6": [],
                               "unix_paths": [], "resolvers": _resolvers()}

    def serve(sock: socket.socket, label: str, stream: bool) -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                if stream:
                    conn, _ = sock.accept()
                    received.append(f"{label}: connection")
                    conn.close()
                else:
                    data, _ = sock.recvfrom(4096)
                    received.append(f"{label}: datagram {data[:40]!r}")
            except (TimeoutError, OSError):
                continue

    def add(family: int, kind: int, addr: Any, key: str | None, label: str) -> None:
        try:
            s = socket.socket(family, kind)
            s.bind(addr)
        except OSError:
            return
        if kind == socket.SOCK_STREAM:
            s.listen(16)
        socks.append(s)
        if key is not None:
            host, port = s.getsockname()[:2]
            targets[key].append([host, port])
        threading.Thread(target=serve, args=(s, label, kind == socket.SOCK_STREAM),
                         daemon=True).start()

    hosts4 = ["127.0.0.1"] + [a for a in [_non_loopback(socket.AF_INET, "192.0.2.1")] if a]
    hosts6 = ["::1"] + [a for a in [_non_loopback(socket.AF_INET6, "2001:db8::1")] if a]
    for h in hosts4:
        add(socket.AF_INET, socket.SOCK_STREAM, (h, 0), "tcp4", f"tcp {h}")
        add(socket.AF_INET, socket.SOCK_DGRAM, (h, 0), "udp4", f"udp {h}")
    for h in hosts6:
        add(socket.AF_INET6, socket.SOCK_STREAM, (h, 0), "tcp6", f"tcp6 {h}")
        add(socket.AF_INET6, socket.SOCK_DGRAM, (h, 0), "udp6", f"udp6 {h}")
    abstract = "gbx-conformance-" + secrets.token_hex(8)
    targets["abstract"] = abstract
    add(socket.AF_UNIX, socket.SOCK_STREAM, "\0" + abstract, None, "unix abstract")
    for d in (host_dir, repo_dir):
        path = str(d / "s.sock")
        add(socket.AF_UNIX, socket.SOCK_STREAM, path, None, f"unix {path}")
        if os.path.exists(path):
            os.chmod(path, 0o777)  # only isolation, not permissions, keeps a candidate out
            targets["unix_paths"].append(path)
    yield Listeners(targets, received)
    stop.set()
    for s in socks:
        s.close()


# --------------------------------------------------------------- host clean-up


def cleanup_ipc_and_keys(marker: str) -> None:
    """Remove host IPC objects and keys a leaking backend may have left (best effort)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    name = ("/" + marker).encode()
    libc.mq_unlink(name)
    libc.sem_unlink(name)
    shmid = libc.shmget(zlib.crc32(marker.encode()) & 0x7FFFFFFF, 0, 0)
    if shmid >= 0:
        libc.shmctl(shmid, 0, None)  # IPC_RMID
    kid = libc.syscall(249, b"user", marker.encode(), None, ctypes.c_long(0))
    if kid > 0:
        libc.syscall(250, 21, ctypes.c_long(kid))  # KEYCTL_INVALIDATE
    for d in ("/tmp", "/dev/shm"):
        for name_ in os.listdir(d):
            if marker in name_:
                p = os.path.join(d, name_)
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.unlink(p)
