"""End to end on a real port: a real uvicorn process, kill -9 and SIGTERM mid-run, restart.

Every sample ends with exactly one result, results finished before the kill are
kept as they were (not graded again), and the server's log never shows a hidden value.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from ports import free_port

from gradebox.service import Store, create_token

SLOW = "import time\ndef is_even(n):\n    time.sleep(0.2)\n    return n % 2 == 0\n"
N = 24
SECRET = "SECRET-HIDDEN-e2e-4b7d"


_STARTED: list[subprocess.Popen[bytes]] = []
"""Every server a test started: whatever a failed assertion left running is killed."""


@pytest.fixture(autouse=True)
def _no_server_outlives_its_test():
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


class Server:
    def __init__(self, db: Path, log: Path, *, first: bool) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [
            sys.executable,
            "-m",
            "gradebox.service",
            "serve",
            "--db",
            str(db),
            "--port",
            str(self.port),
            "--workers",
            "2",
            "--admin-token",
        ]
        self.log = log.open("ab")
        out = log.with_suffix(".out")
        with out.open("wb") as stdout:
            self.proc = subprocess.Popen(argv, stdout=stdout, stderr=self.log)
        _STARTED.append(self.proc)
        # Start-up: the sandbox self-check and warm static tools (~20 s at load 20 on 2 cores).
        deadline = time.monotonic() + 240  # a hang bound: 120 s was seen at load 22 on 2 cores
        while True:
            try:
                if httpx.get(f"{self.url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert self.proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        tokens = [x for x in out.read_text().splitlines() if x.startswith("admin token")]
        # A fresh database: the token is printed once; after that, never again.
        assert len(tokens) == (1 if first else 0)
        self.admin = tokens[0].split(": ", 1)[1] if first else None

    def stop(self, sig: int) -> bool:
        """Send ``sig``; True when the server shut down gracefully."""
        start = self.log.tell()
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=30)
        self.log.close()
        text = Path(self.log.name).read_bytes()[start:].decode(errors="replace")
        # uvicorn re-raises the signal once it has shut down: -15 is a clean SIGTERM exit.
        clean = code in (0, -signal.SIGTERM) and "Application shutdown complete" in text
        return clean and "still in flight" not in text


def rows_in_db(db: Path, run: str) -> dict[int, str]:
    with sqlite3.connect(db) as con:
        got = con.execute(
            "SELECT idx, row FROM samples WHERE run_id = ? AND row IS NOT NULL", (run,)
        )
        return dict(got.fetchall())


def wait_done(url: str, run: str, headers: dict[str, str], at_least: int | None) -> dict:
    """Poll until ``at_least`` rows are in, or (``None``) until the run says it is done.

    The last row lands before the run's status turns ``done``: a test of the status
    waits for the status, not for the count.
    """
    deadline = time.monotonic() + 120
    while True:
        info = httpx.get(f"{url}/v1/runs/{run}", headers=headers).json()
        if (at_least is not None and info["done"] >= at_least) or info["status"] == "done":
            return info
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_restart_mid_run_loses_nothing(tmp_path, sig):
    db, log = tmp_path / "svc.sqlite", tmp_path / "server.log"
    server = Server(db, log, first=True)
    store = Store(db)
    grader = {"Authorization": f"Bearer {create_token(store, 'grader')}"}
    store.close()
    admin = {"Authorization": f"Bearer {server.admin}"}
    task = {"hidden": [{"args": [2], "expect": True}, {"args": [SECRET], "error": "TypeError"}]}
    assert httpx.put(f"{server.url}/v1/tasks/is_even", json=task, headers=admin).status_code == 200
    leak = {"fn": "is_even", "code": "def is_even(n):\n    print(n)\n    raise ValueError(n)\n"}
    r = httpx.post(f"{server.url}/v1/grade", json=leak, headers=grader)
    assert r.status_code == 200 and SECRET not in r.text
    samples = [{"id": f"s{i}", "fn": "is_even", "code": SLOW} for i in range(N)]
    run = httpx.post(f"{server.url}/v1/runs", json=samples, headers=grader).json()["id"]
    wait_done(server.url, run, grader, at_least=4)

    graceful = server.stop(sig)
    before = rows_in_db(db, run)
    assert 4 <= len(before) < N
    if sig == signal.SIGTERM:
        assert graceful  # samples in flight were finished and committed, then a clean exit
        with sqlite3.connect(db) as con:
            assert con.execute("SELECT status FROM runs WHERE id = ?", (run,)).fetchone() == (
                "running",
            )

    server = Server(db, log, first=False)
    info = wait_done(server.url, run, grader, at_least=None)
    assert info["status"] == "done" and info["done"] == N
    lines = httpx.get(f"{server.url}/v1/runs/{run}/results", headers=grader).text.splitlines()
    assert [json.loads(x)["id"] for x in lines] == [s["id"] for s in samples]
    after = rows_in_db(db, run)
    assert len(after) == N
    assert all(after[i] == before[i] for i in before)  # kept, not graded again
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM samples WHERE run_id = ?", (run,)).fetchone() == (
            N,
        )
    assert server.stop(signal.SIGTERM)
    assert SECRET not in log.read_text(errors="replace")
    assert "run " + run in log.read_text()  # the log is there, and it was checked
