"""POST /v1/gates: each gate runs in a process of its own, never in the server's.

A gate's host-side work (parsing the patch, the protection and tamper scans, the
static layers) is pure Python that holds the GIL: where it ran in a worker thread
of the server, a 4 MB gate held ``/healthz`` for 2-7 s. Wall times on a shared
machine are noise, so the CPU test measures what causes the stall, as
``test_attack_static_gil.py`` does: CPU time of the server's process (here the
test process: the app runs in it through ASGITransport) against the gate's own
(its process, reaped by the server: ``RUSAGE_CHILDREN``), as a share. The control
is the same gate run as the service ran it before, in a thread of this process.

The gate's process is a fresh interpreter with an environment of its own: it
holds neither the server's keys and tokens nor its database. A process that is
killed, or outlives its time limit, is an infrastructure error and the next gate
runs; a stopped app kills its gate, which runs again on the next start; a gate
process whose server died kills itself. Real git, real sandboxes, real processes.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from ports import free_port
from waiting import HANG_S, Progress, tree_cpu_s

from gradebox.patches import GateSpec, TestIds, run_gate
from gradebox.service.api.gates import child_env

from ...patches import conftest as patch_fixtures
from ...patches.conftest import F2P, fix_mean, make_repo
from .test_gates import bearer, service, wait_gate

env_cache = patch_fixtures.env_cache  # the session's environment cache (a fixture)

pytestmark = pytest.mark.anyio

INFRA = "infrastructure error: the gate could not be run (see the server log)"
"""What a grader sees of any infrastructure error (the service's fixed message)."""
SECRETS = {
    "GRADEBOX_JUDGE_API_KEY": "sk-judge-key-1f2e3d",
    "OPENAI_API_KEY": "sk-openai-key-4c5b6a",
    "GITHUB_TOKEN": "ghp_token_7a8b9c",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def heavy(root: Path) -> None:
    """The fix, and a large new module: ~1 MB of code for the gate to parse and scan."""
    fix_mean(root)
    body = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n\n" for i in range(20_000))
    (root / "calc" / "big.py").write_text(body)


def jobs_of(client: httpx.AsyncClient) -> Any:
    """The app's gate queue (:class:`gradebox.service.gates.GateJobs`)."""
    return client._transport.app.state.gates  # type: ignore[attr-defined]


def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def working() -> Progress:
    """A deadline that moves while this process's children (gates, sandboxes) use CPU.

    A busy machine stretches a heavy gate's wall time without bound (it took over
    240 s beside two CPU-bound processes): the wait fails on a stall, not a clock.
    """
    return Progress(lambda: tree_cpu_s(os.getpid(), own=False))


async def ready(client: httpx.AsyncClient) -> None:
    """Wait until the app's own sandbox has opened (its self-check is CPU in this process)."""
    progress = working()
    while (await client.get("/readyz")).status_code != 200:
        assert not progress.expired(), "the app's sandbox stalled before it was ready"
        await anyio.sleep(0.2)


async def done(db: Path, gate_id: str) -> None:
    """Wait until the gate is done, reading the database (a poll costs the app nothing)."""
    progress = working()
    with sqlite3.connect(db) as con:
        query = "SELECT status FROM gates WHERE id = ?"
        while con.execute(query, (gate_id,)).fetchone() != ("done",):
            assert not progress.expired(), f"gate {gate_id} stalled: no CPU used for a minute"
            await anyio.sleep(0.2)


async def running_pid(jobs: Any) -> int:
    """The pid of the gate process, once one runs."""
    with anyio.fail_after(240):
        while (pid := jobs.running_pid) is None:
            await anyio.sleep(0.01)
    return int(pid)


async def gone(pid: int) -> None:
    """Wait until ``pid`` no longer runs (gone, or a zombie nobody will wait for)."""
    with anyio.fail_after(60):
        while _state(pid) not in ("Z", "X"):
            await anyio.sleep(0.05)


async def test_a_heavy_gate_costs_the_servers_process_little(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    patch = repo.patch(heavy)
    assert len(patch) > 900_000
    body = {"repo": "calc", "base": "main", "patch": patch, "fail_to_pass": [*F2P]}
    async with service(tmp_path, env_cache) as (client, admin, grader, _other):
        await ready(client)
        r = await client.put("/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        assert r.status_code == 200, r.text
        warm = {**body, "patch": repo.patch(fix_mean)}  # the environment is built, not timed
        r = await client.post("/v1/gates", json=warm, headers=grader)
        await done(tmp_path / "svc.sqlite", r.json()["id"])
        assert (await wait_gate(client, r.json()["id"], grader))["row"]["verdict"] == "pass"

        # What the server's process spends per wall second whatever it does (threads that
        # poll, ~0.01 s/s): a busy machine stretches the gate's wall time, not its work.
        server0, wall0 = cpu(resource.RUSAGE_SELF), time.monotonic()
        await anyio.sleep(3)
        idle = (cpu(resource.RUSAGE_SELF) - server0) / (time.monotonic() - wall0)

        server0, gate0 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
        wall0 = time.monotonic()
        r = await client.post("/v1/gates", json=body, headers=grader)
        assert r.status_code == 202, r.text
        await done(tmp_path / "svc.sqlite", r.json()["id"])  # not through the API: no polls
        server, gate = cpu(resource.RUSAGE_SELF) - server0, cpu(resource.RUSAGE_CHILDREN) - gate0
        waited = time.monotonic() - wall0
        server = max(0.0, server - idle * waited)
        row = (await wait_gate(client, r.json()["id"], grader))["row"]
        assert row["verdict"] == "pass", row

        # The control: the same gate as the service ran it before, in a thread of this process.
        spec = GateSpec("control", repo.path, repo.base, patch, TestIds(F2P, "auto"))
        config = jobs_of(client).config
        server0, gate0 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
        control = await anyio.to_thread.run_sync(run_gate, spec, config)
        server_c = cpu(resource.RUSAGE_SELF) - server0
        gate_c = cpu(resource.RUSAGE_CHILDREN) - gate0
        assert control.verdict == "pass", control
    share, share_c = server / (server + gate), server_c / (server_c + gate_c)
    figures = f"own process: server {server:.2f} s (idle {idle:.4f} s/s taken off for " \
              f"{waited:.0f} s), gate {gate:.2f} s; " \
              f"in a thread: server {server_c:.2f} s, gate {gate_c:.2f} s"  # fmt: skip
    print(figures)
    assert share_c > 0.5, figures  # the gate is heavy, and its work is host-side Python
    # In a thread the server's process did nearly all of it (~95%); in the gate's own
    # process the server's share is receiving the body, storing it and the polls (~5%).
    assert share < 0.2, figures


async def test_a_gate_process_holds_no_secret_of_the_server(tmp_path, env_cache, monkeypatch):
    repo = make_repo(tmp_path / "calc")
    body = {"repo": "calc", "base": "main", "patch": repo.patch(fix_mean), "fail_to_pass": [*F2P]}
    async with service(tmp_path, env_cache) as (client, admin, grader, _other):
        tokens = [h["Authorization"].split(" ", 1)[1] for h in (admin, grader)]
        for name, value in {**SECRETS, "GRADEBOX_ADMIN_TOKEN": tokens[0]}.items():
            monkeypatch.setenv(name, value)  # the server's environment, as an operator's may be
        secrets = [*SECRETS.values(), *tokens]
        r = await client.put("/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        assert r.status_code == 200, r.text
        jobs = jobs_of(client)
        seen: dict[str, Any] = {}
        for attempt in range(5):  # a gate that ended before it was read is tried again
            r = await client.post("/v1/gates", json={**body, "id": f"g{attempt}"}, headers=grader)
            pid = await running_pid(jobs)
            try:
                seen = _process(pid)
            except (FileNotFoundError, ProcessLookupError):
                seen = {}
            row = (await wait_gate(client, r.json()["id"], grader))["row"]
            assert row["verdict"] == "pass", row
            if seen:
                break
        assert seen, "no gate process was seen running"
    assert row["judge"] is None  # service gates do not judge: the process needs no key
    environ = seen["environ"]
    assert not any(s.encode() in environ for s in secrets), environ
    assert b"GRADEBOX_" not in environ and b"API_KEY" not in environ, environ
    assert not any(s.encode() in seen["cmdline"] for s in secrets)
    # a fresh interpreter (exec'd, not a fork of the server), without the server's database
    assert seen["cmdline"].split(b"\0")[:3] == [sys.executable.encode(), b"-I", b"-c"]
    assert not [f for f in seen["fds"] if "sqlite" in f], seen["fds"]


def _process(pid: int) -> dict[str, Any]:
    """What ``/proc`` shows of a process: its initial environment (and its descendants'),
    argv and open files."""
    proc = Path(f"/proc/{pid}")
    fds = []
    for fd in (proc / "fd").iterdir():
        with contextlib.suppress(FileNotFoundError):
            fds.append(os.readlink(fd))
    environ = (proc / "environ").read_bytes()
    for child in _descendants(pid):  # git, pip, the sandboxes: whatever runs at the moment
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, PermissionError):
            environ += b"\0" + Path(f"/proc/{child}/environ").read_bytes()
    return {"environ": environ, "cmdline": (proc / "cmdline").read_bytes(), "fds": fds}


def _descendants(pid: int) -> list[int]:
    out = []
    for child in _children(pid):
        out += [child, *_descendants(child)]
    return out


def _children(pid: int) -> list[int]:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return []
    found = []
    for task in tasks:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def test_the_gate_environment_keeps_what_git_and_pip_need_and_no_secret(tmp_path):
    server = {
        **SECRETS,
        "PATH": "/usr/bin:/bin",
        "HOME": "/root",
        "LC_ALL": "C.UTF-8",
        "HTTPS_PROXY": "http://proxy:3128",
        "PIP_INDEX_URL": "https://pypi.example/simple",
        "PIP_PASSWORD": "hunter2",
        "GRADEBOX_JUDGE_BASE_URL": "https://judge.example/v1",
        "AWS_SECRET_ACCESS_KEY": "aws",
        "PYTHONPATH": "/somewhere",
        "TMPDIR": "/var/tmp",
    }
    env = child_env(server, tmp_path)
    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/root",
        "LC_ALL": "C.UTF-8",
        "HTTPS_PROXY": "http://proxy:3128",
        "PIP_INDEX_URL": "https://pypi.example/simple",
        "TMPDIR": str(tmp_path),
    }


async def test_a_killed_gate_process_is_an_infra_error_and_the_next_gate_runs(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    body = {"repo": "calc", "base": "main", "patch": repo.patch(fix_mean), "fail_to_pass": [*F2P]}
    async with service(tmp_path, env_cache) as (client, admin, grader, _other):
        r = await client.put("/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        assert r.status_code == 200, r.text
        jobs = jobs_of(client)
        r = await client.post("/v1/gates", json={**body, "id": "killed"}, headers=grader)
        killed = r.json()["id"]
        pid = await running_pid(jobs)
        box = Path(os.readlink(f"/proc/{pid}/cwd")).parent  # the process's scratch
        os.kill(pid, signal.SIGKILL)
        done = await wait_gate(client, killed, grader)
        assert done["row"]["verdict"] == "needs_review", done
        assert done["row"]["reason"] == "infra_error"
        assert done["row"]["infra_error"] == INFRA  # the grader sees the fixed message
        full = (await client.get(f"/v1/gates/{killed}", headers=admin)).json()["row"]
        assert "ended without a row" in full["infra_error"], full
        assert not box.exists()  # what it left behind went with it

        r = await client.post("/v1/gates", json={**body, "id": "next"}, headers=grader)
        assert (await wait_gate(client, r.json()["id"], grader))["row"]["verdict"] == "pass"
        await gone(pid)


SLEEPS = "import time\n\n\ndef test_sleeps():\n    time.sleep(3600)\n"
"""A repository test that never ends in time: its gate outlives any limit under an hour."""


async def test_a_gate_past_its_time_limit_is_killed_with_its_sandboxes(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    stuck = make_repo(tmp_path / "stuck", {"tests/test_sleeps.py": SLEEPS})
    body = {"base": "main", "fail_to_pass": [*F2P]}
    async with service(tmp_path, env_cache) as (client, admin, grader, _other):
        for name, where in (("calc", repo), ("stuck", stuck)):
            r = await client.put(f"/v1/repos/{name}", json={"path": str(where.path)}, headers=admin)
            assert r.status_code == 200, r.text
        jobs = jobs_of(client)
        jobs.time_limit_s = 10.0  # the sandbox's own limit here is 120 s
        stuck_body = {**body, "repo": "stuck", "patch": stuck.patch(fix_mean)}
        r = await client.post("/v1/gates", json=stuck_body, headers=grader)
        gate_id = r.json()["id"]
        pid = await running_pid(jobs)
        sandboxed = await _pytest_below(pid)  # the base run's sandbox, sleeping
        slow = await wait_gate(client, gate_id, grader)
        assert slow["row"]["reason"] == "infra_error" and slow["row"]["infra_error"] == INFRA
        full = (await client.get(f"/v1/gates/{gate_id}", headers=admin)).json()["row"]
        assert "limit and was killed" in full["infra_error"], full
        for gone_pid in (pid, *sandboxed):
            await gone(gone_pid)
        jobs.time_limit_s = None  # the default: generous
        calc_body = {**body, "repo": "calc", "patch": repo.patch(fix_mean)}
        r = await client.post("/v1/gates", json=calc_body, headers=grader)
        assert (await wait_gate(client, r.json()["id"], grader))["row"]["verdict"] == "pass"


async def _pytest_below(pid: int) -> list[int]:
    """The processes below ``pid`` once one of them runs pytest (the sandbox's tree)."""
    with anyio.fail_after(60):
        while True:
            found = {}
            for child in _descendants(pid):
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    found[child] = Path(f"/proc/{child}/cmdline").read_bytes()
            if any(b"pytest" in argv for argv in found.values()):
                return list(found)
            assert _state(pid) not in ("Z", "X"), "the gate ended before its sandbox was seen"
            await anyio.sleep(0.05)


async def test_a_stop_kills_the_running_gate_and_the_next_start_runs_it(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    body = {"repo": "calc", "base": "main", "patch": repo.patch(fix_mean), "fail_to_pass": [*F2P]}
    async with service(tmp_path, env_cache) as (client, admin, grader, _other):
        r = await client.put("/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        assert r.status_code == 200, r.text
        jobs = jobs_of(client)
        r = await client.post("/v1/gates", json=body, headers=grader)
        gate_id = r.json()["id"]
        pid = await running_pid(jobs)
    await gone(pid)  # the app stopped: its gate's process went with it
    with sqlite3.connect(tmp_path / "svc.sqlite") as con:
        (status,) = con.execute("SELECT status FROM gates WHERE id = ?", (gate_id,)).fetchone()
    assert status == "running"
    async with service(tmp_path, env_cache) as (client, *_):  # the same database
        row = (await wait_gate(client, gate_id, grader))["row"]
    assert row["verdict"] == "pass", row


def test_a_gate_process_whose_server_died_kills_itself(tmp_path):
    repo = make_repo(tmp_path / "calc")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "gradebox.service", "serve", "--db", str(tmp_path / "db"),
            "--port", str(port), "--workers", "1", "--admin-token"]  # fmt: skip
    out = tmp_path / "serve.out"
    with out.open("wb") as stdout:
        server = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: _healthy(url), server)
        (line,) = [x for x in out.read_text().splitlines() if x.startswith("admin token")]
        admin = bearer(line.split(": ", 1)[1])
        # httpx's default 5 s read timeout is a wall-clock bound a loaded server overran
        # (registering the repository): these only bound a hang.
        r = httpx.put(
            f"{url}/v1/repos/calc", json={"path": str(repo.path)}, headers=admin, timeout=HANG_S
        )
        assert r.status_code == 200, r.text
        body = {"repo": "calc", "base": "main", "patch": repo.patch(fix_mean)}
        r = httpx.post(f"{url}/v1/gates", json=body, headers=admin, timeout=HANG_S)
        assert r.status_code == 202, r.text
        found: list[int] = []

        def spotted() -> bool:
            found[:] = _gate_children(server.pid)
            return bool(found)

        _wait_for(spotted, server)
        (pid,) = found
        box = Path(os.readlink(f"/proc/{pid}/cwd")).parent
    finally:
        server.kill()  # no shutdown: the gate's process must notice by itself
        server.wait(timeout=30)
    deadline = time.monotonic() + 60
    while _state(pid) not in ("Z", "X"):
        assert time.monotonic() < deadline, f"gate process {pid} outlived its server"
        time.sleep(0.05)
    shutil.rmtree(box, ignore_errors=True)  # a dead server's gate scratch: nobody else will


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz").status_code == 200
    except httpx.TransportError:
        return False


def _wait_for(ok: Any, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not ok():
        assert server.poll() is None, "the server ended"
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.05)


def _gate_children(pid: int) -> list[int]:
    """The server's children that are gate processes (``python -I -c ...``)."""
    found = []
    for child in _children(pid):
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue
        if argv[1:3] == [b"-I", b"-c"] and b"gradebox.patches.child" in argv[3]:
            found.append(child)
    return found


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "X"
