"""An endpoint that echoes the judge's key: no response, row, log line or metric repeats it.

The endpoint (the real local server, real sockets, the real openai client) quotes
the configured key in a 401 body, a 500 body, its 200 reply's content, model and
fingerprint, a response header and the status line, whole and in the masked and
partial forms proxies print. The grader token reads its rows through
``POST /v1/grade`` (``judge: "wait"`` and ``"defer"``), ``GET /v1/grades/{id}``
and a run's results; an admin reads ``/metrics``. Every record of every logger is
captured at ``DEBUG``, and the judge's cache file is read byte by byte. Neither
the key nor any 8 characters of it in a row (``judge.redact``) may appear in any
of them; an upstream error reaches the grader as one fixed sentence, and the
endpoint's own words (redacted) reach the server log.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from key_echo import Canary, EchoServer
from openai_server import Scripted, answer, completion

from gradebox.pipeline.judge import JudgeStage
from gradebox.service.engine.judging import UNAVAILABLE
from gradebox.service.logs import RequestIdFilter, json_formatter
from judge import Judge, JudgeConfig

pytestmark = pytest.mark.anyio

CANARY = Canary("sk-canary-svc-0d8c6b4a2e1f9735-KEYEND", slice(5, 22))
KEY, MASKED, PARTIAL = CANARY.key, CANARY.masked, CANARY.partial
GOOD = "def inc(x: int) -> int:\n    return x + 1\n"
TASK = {
    "public": {"fn": "inc", "spec": "Return x plus one.", "signature": "def inc(x: int) -> int"},
    "hidden": [{"fn": "inc", "args": [1], "expect": 2}, {"fn": "inc", "args": [5], "expect": 6}],
    "disclosure": "cases",
}


def assert_clean(where: str, text: str | bytes) -> None:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    found = CANARY.leaks(text)
    assert not found, f"the key leaked into {where}: {found[:3]}"


def unauthorized(body: dict[str, Any]) -> Scripted:
    message = f"Incorrect API key provided: {KEY} ({MASKED}, {PARTIAL})."
    return Scripted(401, {"error": {"message": message, "code": "invalid_api_key", "param": KEY}})


def server_error(body: dict[str, Any]) -> Scripted:
    return Scripted(500, f"proxy error forwarding Authorization: Bearer {KEY}")


def echoing_reply(body: dict[str, Any]) -> Scripted:
    reply = json.loads(answer(body)["choices"][0]["message"]["content"])
    reply["rationale"] = f"Correct. Your key is {KEY}; proxies show it as {MASKED}."
    reply["issues"] = [{"line": 1, "severity": "info", "message": f"Header said {PARTIAL}."}]
    return Scripted(200, completion(json.dumps(reply), model=KEY, fingerprint=f"fp_{KEY}"))


REPLIES = {"401": unauthorized, "500": server_error, "200": echoing_reply}


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    srv = EchoServer(CANARY).start()
    yield srv
    srv.stop()


class Captured(logging.Handler):
    """Every record, formatted as the service formats them (JSON, tracebacks included)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.stream = io.StringIO()
        self.addFilter(RequestIdFilter())
        self.setFormatter(json_formatter())

    def emit(self, record: logging.LogRecord) -> None:
        self.stream.write(self.format(record) + "\n")

    def text(self) -> str:
        return self.stream.getvalue()


@pytest.fixture
def logs() -> Iterator[Captured]:
    """Every logger at DEBUG, the non-propagating ones included."""
    handler = Captured()
    loggers = [logging.getLogger()] + [
        v for v in list(logging.root.manager.loggerDict.values()) if isinstance(v, logging.Logger)
    ]
    saved = [(lg, lg.level, lg.disabled) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.disabled = False
        if lg is logging.getLogger() or not lg.propagate:
            lg.addHandler(handler)
    try:
        yield handler
    finally:
        for lg, level, disabled in saved:
            lg.setLevel(level)
            lg.disabled = disabled
            lg.removeHandler(handler)


@pytest.fixture
def stage(echo: EchoServer, tmp_path: Path) -> Iterator[JudgeStage]:
    """The CLI's judge stage as ``gradebox serve`` builds it, with quick retries."""
    env = {
        "GRADEBOX_JUDGE_BASE_URL": echo.base_url,
        "GRADEBOX_JUDGE_MODEL": "judge-model",
        "GRADEBOX_JUDGE_API_KEY": KEY,
    }
    config = replace(
        JudgeConfig.from_env(env),
        cache_path=tmp_path / "judge.sqlite",
        max_attempts=2,
        backoff_initial_s=0.001,
        backoff_max_s=0.01,
    )
    made = JudgeStage(Judge(config), config=config)
    yield made
    made.close()


def cache_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(tmp_path.glob("judge.sqlite*")))


@pytest.mark.parametrize("reply", list(REPLIES))
async def test_no_response_row_log_or_metric_repeats_the_key(
    reply, kit, echo, stage, logs, tmp_path
):
    echo.responder = REPLIES[reply]
    seen: list[str] = []

    async def call(method: str, url: str, headers: dict[str, str], **kw: Any) -> Any:
        r = await svc.client.request(method, url, headers=headers, **kw)
        seen.append(f"{method} {url} {r.status_code} {dict(r.headers)} {r.text}")
        return r

    async with kit.running(judge=stage) as svc:
        assert (await call("PUT", "/v1/tasks/inc", svc.admin, json=TASK)).status_code == 200
        body = {"fn": "inc", "code": GOOD, "judge": "wait"}
        waited = (await call("POST", "/v1/grade", svc.grader, json=body)).json()
        body["judge"] = "defer"
        deferred = (await call("POST", "/v1/grade", svc.grader, json=body)).json()
        with anyio.fail_after(30):
            while True:
                r = await call("GET", f"/v1/grades/{deferred['grade_id']}", svc.grader)
                if r.json()["judge"]["status"] != "pending":
                    deferred = r.json()
                    break
                await anyio.sleep(0.05)
        again = (await call("GET", f"/v1/grades/{waited['grade_id']}", svc.grader)).json()
        samples = [{"id": "r1", "fn": "inc", "code": GOOD}]
        run = (await call("POST", "/v1/runs?judge=wait", svc.grader, json=samples)).json()
        await svc.wait_run(run["id"], svc.grader)
        await call("GET", f"/v1/runs/{run['id']}/results", svc.grader)
        await call("GET", f"/v1/runs/{run['id']}/results", svc.admin)
        await call("GET", "/metrics", svc.admin)
        await call("GET", "/v1/stats", svc.grader)

    assert echo.requests and {s.headers["authorization"] for s in echo.requests} == {
        f"Bearer {KEY}"
    }
    for text in seen:
        assert_clean("a response", text)
    assert_clean("a log line", logs.text())
    assert_clean("the judge cache", cache_bytes(tmp_path))
    for row in (waited, deferred, again):
        judge = row["judge"]
        if reply == "200":
            assert judge["status"] == "scored"
            assert "[REDACTED]" in judge["rationale"]
        else:
            assert (judge["status"], judge["reason"]) == ("unavailable", UNAVAILABLE)
            assert judge["reason_code"] == ("rejected" if reply == "401" else "server_error")
    if reply != "200":  # the endpoint's own words went to the log, redacted
        assert any(
            '"judge: sample' in line and f"HTTP {reply}" in line and "[REDACTED]" in line
            for line in logs.text().splitlines()
        )
