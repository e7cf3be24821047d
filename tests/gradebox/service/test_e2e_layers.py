"""All three layers end to end: a real `gradebox serve`, real sockets, a real judge.

The server is started as an operator starts it (``python -m gradebox.service serve``,
the judge configured from the environment with a canary key); the judge endpoint is
conftest's local OpenAI-compatible server. One walk through what a client does:
static findings and a judge annotation on a row, a task allowing the deciding rule,
``defer`` then poll, a judge ``match`` that leaves a failure failing, feedback and
stats, a token revoked through the API; then the server's own log (JSON lines) and
``/metrics`` are searched for the canaries.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from ports import free_port

KEY = "sk-canary-KEY-e2e-layers-5a1c"
SECRET_ARG = "SECRET-ARG-e2e-91ab"
SECRET_EXPECT = hashlib.md5(SECRET_ARG.encode()).hexdigest()
HEAD = "import hashlib\n\n\ndef digest(data: bytes, salt: str) -> str:\n"
MD5 = HEAD + "    return hashlib.md5(salt.encode() + data).hexdigest()\n"
WRONG = HEAD + "    return 'nope'\n"
TASK = {
    "public": {
        "spec": "Return the hex MD5 digest of salt (UTF-8) followed by data (a checksum).",
        "signature": "def digest(data: bytes, salt: str) -> str",
    },
    "hidden": [
        {"args": [{"$bytes": "YWJj"}, ""], "expect": "900150983cd24fb0d6963f7d28e17f72"},
        {"args": [{"$bytes": ""}, SECRET_ARG], "expect": SECRET_EXPECT},
    ],
    "disclosure": "cases",
}


@pytest.fixture
def server(tmp_path: Path, endpoint):
    port, log = free_port(), tmp_path / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADEBOX_", "OPENAI_"))}
    env |= {
        "GRADEBOX_JUDGE_BASE_URL": endpoint.base_url,
        "GRADEBOX_JUDGE_MODEL": "judge-model",
        "GRADEBOX_JUDGE_API_KEY": KEY,
    }
    argv = [
        sys.executable, "-m", "gradebox.service", "serve", "--db", str(tmp_path / "g.sqlite"),
        "--port", str(port), "--admin-token", "--no-judge-cache", "--static-sessions", "1",
        "--log-level", "debug", "--rate-limit", "0",
    ]  # fmt: skip
    with log.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env)
    assert proc.stdout is not None
    admin = proc.stdout.readline().decode().split(": ", 1)[1].strip()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # the sandbox self-check and warm static tools
    while True:
        try:
            if httpx.get(f"{url}/readyz").status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.1)
    try:
        yield url, {"Authorization": f"Bearer {admin}"}, log
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_three_layers_on_a_real_server(server, endpoint):
    url, admin, log = server
    seen: list[str] = []

    def call(method, path, headers, **kw):
        r = httpx.request(method, url + path, headers=headers, timeout=60, **kw)
        seen.append(f"{r.status_code} {dict(r.headers)} {r.text}")
        return r

    assert call("PUT", "/v1/tasks/digest", admin, json=TASK).status_code == 200
    made = call("POST", "/v1/tokens", admin, json={"role": "grader"}).json()
    grader = {"Authorization": f"Bearer {made['token']}"}

    # Static findings and a judge annotation; the high-severity finding fails a passing sample.
    body = {"id": "s1", "fn": "digest", "code": MD5, "judge": "wait"}
    row = call("POST", "/v1/grade", grader, json=body).json()
    assert row["outcomes"] == ["ok", "ok"]
    assert (row["verdict"], row["reason"]) == ("fail", "policy:static")
    assert "B324" in row["static"]["deciding"]
    assert (row["judge"]["status"], row["judge"]["verdict"]) == ("scored", "match")

    # A task that allows B324 passes the same code (the finding stays on the row).
    allowing = {**TASK, "static": {"allow_rules": ["B324"]}}
    assert call("PUT", "/v1/tasks/digest", admin, json=allowing).json()["revision"] == 2
    passed = call("POST", "/v1/grade", grader, json=body).json()
    assert (passed["verdict"], passed["task_revision"]) == ("pass", 2)
    assert any(f["rule"] == "B324" for f in passed["static"]["findings"])

    # defer, then poll; a judge "match" on a failing candidate leaves it failing.
    endpoint.delay = 0.5
    pending = call("POST", "/v1/grade", grader, json={**body, "code": WRONG, "judge": "defer"})
    pending = pending.json()
    assert pending["judge"]["status"] == "pending" and pending["verdict"] == "fail"
    deadline = time.monotonic() + 30
    while (final := call("GET", f"/v1/grades/{pending['grade_id']}", grader).json())["judge"][
        "status"
    ] == "pending":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert final["judge"]["verdict"] == "match"
    assert (final["pass"], final["verdict"], final["reason"]) == (False, "fail", "hidden_tests")

    # Feedback, then stats with the right counts.
    for grade_id, accepted in ((row["grade_id"], True), (passed["grade_id"], False)):
        fb = call("POST", f"/v1/grades/{grade_id}/feedback", grader, json={"accepted": accepted})
        assert fb.status_code == 200
    stats = call("GET", "/v1/stats", grader, params={"task": "digest"}).json()
    assert stats["pass_rejected"]["n"] == 1 and stats["pass_rejected"]["rejected"] == 1
    assert stats["fail_accepted"]["n"] == 1 and stats["fail_accepted"]["accepted"] == 1
    assert stats["by_static_effect"]["fail"]["n"] == 1

    # Revoked through the API: its very next request is refused.
    assert call("DELETE", f"/v1/tokens/{made['id']}", admin).status_code == 200
    assert call("GET", "/v1/stats", grader).status_code == 401

    metrics = call("GET", "/metrics", admin).text
    assert 'gradebox_judge_calls_total{status="scored"}' in metrics
    text = log.read_text()
    lines = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
    assert lines and all("request_id" in x for x in lines)
    assert any(x.get("route") == "/v1/grade" for x in lines)
    for secret in (KEY, SECRET_ARG, SECRET_EXPECT):
        assert secret not in "\n".join(seen), secret
        assert secret not in text, secret
    assert all(k == f"Bearer {KEY}" for k in endpoint.keys)
