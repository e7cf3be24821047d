"""End to end: ``gradebox token revoke`` from another process stops that token's runs.

A real ``gradebox serve`` (uvicorn, its own sandbox) grades two tokens' runs of
slow candidates; the operator revokes one token with the CLI, which writes the
SQLite file from its own process. The server reads tokens from the database on
every request and before each sample it starts, so at once: the token's next
request is a 401, its runs are cancelled with ``token revoked`` (samples in flight
finish, no new one starts), and the other token's run goes on to the end.
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from gradebox.service import Store, create_token

SLOW = "import time\n\n\ndef inc(x):\n    time.sleep(0.2)\n    return x + 1\n"
TASK = {"public": {"spec": "Return x plus one."}, "hidden": [{"args": [1], "expect": 2}]}
GRADEBOX = str(Path(sys.executable).parent / "gradebox")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path):
    port, db, log = _port(), tmp_path / "svc.sqlite", tmp_path / "server.log"
    argv = [
        sys.executable, "-m", "gradebox.service", "serve", "--db", str(db),
        "--port", str(port), "--workers", "2", "--admin-token", "--static-sessions", "0",
        "--rate-limit", "0",
    ]  # fmt: skip
    with log.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err)
    try:
        assert proc.stdout is not None
        admin = proc.stdout.readline().decode().split(": ", 1)[1].strip()
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120  # the sandbox's self-check, on a loaded machine
        while True:
            try:
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.1)
        yield url, {"Authorization": f"Bearer {admin}"}, db, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def _status(url, run_id, admin) -> dict:
    r = httpx.get(f"{url}/v1/runs/{run_id}", headers=admin, timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def _until(url, run_id, admin, check, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while not check(info := _status(url, run_id, admin)):
        assert time.monotonic() < deadline, info
        time.sleep(0.05)
    return info


def test_a_cli_revoke_cancels_the_tokens_runs_on_a_running_server(server):
    url, admin, db, log = server
    store = Store(db)  # another process's writes, as `gradebox token create` makes them
    tokens = [create_token(store, "grader") for _ in range(2)]
    store.close()
    mine, theirs = ({"Authorization": f"Bearer {t}"} for t in tokens)
    assert httpx.put(f"{url}/v1/tasks/inc", json=TASK, headers=admin).status_code == 200
    samples = [{"id": str(i), "fn": "inc", "code": SLOW} for i in range(20)]
    runs = []
    for headers, n in ((mine, 20), (theirs, 8), (mine, 5)):
        r = httpx.post(f"{url}/v1/runs", json=samples[:n], headers=headers, timeout=30)
        assert r.status_code == 202, r.text
        runs.append(r.json()["id"])
    first, other, queued = runs
    _until(url, first, admin, lambda x: x["done"] >= 2)

    out = subprocess.run(
        [GRADEBOX, "token", "revoke", tokens[0].split("_")[1], "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert httpx.get(f"{url}/v1/runs/{first}", headers=mine).status_code == 401  # at once
    for run_id in (first, queued):
        info = _until(url, run_id, admin, lambda x: x["status"] in ("cancelled", "done"), 15)
        assert (info["status"], info["reason"]) == ("cancelled", "token revoked")
    at_cancel = _status(url, first, admin)["done"]
    done = _until(url, other, admin, lambda x: x["status"] == "done", timeout=90)
    assert (done["done"], done["reason"]) == (8, None)
    final = _status(url, first, admin)["done"]
    assert final <= at_cancel + 2 < 20  # only samples in flight at the revoke finished
    assert _status(url, queued, admin)["done"] == 0
    with sqlite3.connect(db) as con:
        left = con.execute(
            "SELECT count(*) FROM samples WHERE run_id = ? AND row IS NULL", (first,)
        ).fetchone()[0]
    assert left == 20 - final
    text = log.read_text()
    assert f"run {first}: cancelled (token revoked)" in text
    assert tokens[0] not in text and tokens[0].split("_")[2] not in text
