"""Logs and canaries: JSON lines with a request id, and no secret in any response, line or metric.

Every log record of the process is captured at ``debug`` level (all loggers: ours,
uvicorn's, httpx's, openai's) through the service's own JSON formatter. The task's
hidden arguments and expected values are canaries, and so is the judge's API key;
hostile candidates try to push their arguments out through every channel a row
has (output, exceptions, exit codes, crashes), under every disclosure, sync and
batch, judge wait and defer. Not one canary may appear in a response body or
header, a log line, or ``/metrics``.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import anyio
import pytest

from gradebox.pipeline.judge import JudgeStage, open_judge_stage
from gradebox.service.logs import RequestIdFilter, json_formatter

pytestmark = pytest.mark.anyio

KEY = "sk-canary-KEY-obs-77d1e0"
ARG, EXPECT = "CANARY-ARG-3f9a2c", "CANARY-EXP-8b1d4e"
NUM_ARG, NUM_EXPECT = 73_519_264_081, 73_519_264_082
CANARIES = (KEY, ARG, EXPECT, str(NUM_ARG), str(NUM_EXPECT))
SPEC = {"spec": "Return s with '!' appended.", "signature": "def shout(s: str, n: int) -> str"}
HIDDEN = [
    {"args": ["ok", 1], "expect": "ok!"},
    {"args": [ARG, NUM_ARG], "expect": EXPECT},
    {"args": [ARG, NUM_ARG], "kwargs": {}, "error": "ValueError"},
]
HOSTILE = {
    "prints": "def shout(s, n):\n    print(s, n)\n    import sys\n    print(s, file=sys.stderr)\n"
    "    return s + '!'\n",
    "raises": "def shout(s, n):\n    raise RuntimeError(f'{s} {n} ' * 50)\n",
    "returns": "def shout(s, n):\n    return [s, n, s * 3]\n",
    "exits": "def shout(s, n):\n    import sys\n    sys.exit(s)\n",
    "crashes": "def shout(s, n):\n    import os\n    print(s, flush=True)\n    os._exit(n % 200)\n",
    "honest": "def shout(s: str, n: int) -> str:\n    return s + '!'\n",
}


class Captured(logging.Handler):
    """Every record of the process, formatted as the service formats them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.stream = io.StringIO()
        self.addFilter(RequestIdFilter())
        self.setFormatter(json_formatter())

    def emit(self, record: logging.LogRecord) -> None:
        self.stream.write(self.format(record) + "\n")

    def lines(self) -> list[dict]:
        return [json.loads(x) for x in self.stream.getvalue().splitlines()]


@pytest.fixture
def logs() -> Iterator[Captured]:
    handler, root = Captured(), logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@pytest.fixture
def stage(endpoint) -> Iterator[JudgeStage]:
    env = {
        "GRADEBOX_JUDGE_BASE_URL": endpoint.base_url,
        "GRADEBOX_JUDGE_MODEL": "m",
        "GRADEBOX_JUDGE_API_KEY": KEY,
    }
    made = open_judge_stage(env, rubric_names=["default"], no_cache=True)
    assert isinstance(made, JudgeStage)
    yield made
    made.close()


def _clean(where: str, text: str) -> None:
    for canary in CANARIES:
        assert canary not in text, f"{canary} leaked into {where}"


async def test_every_response_header_log_line_and_metric_is_free_of_canaries(
    kit, logs, stage, endpoint, static_service
):
    seen: list[str] = []

    async def call(method, url, headers, **kw):
        r = await svc.client.request(method, url, headers=headers, **kw)
        seen.append(f"{method} {url} {r.status_code} {dict(r.headers)} {r.text}")
        return r

    async with kit.running(register=False, judge=stage, static=static_service) as svc:
        # A bad task body holding the canaries: the 422 must not repeat them.
        bad = {"public": SPEC, "hidden": [{**HIDDEN[1], "error": EXPECT}]}
        assert (await call("PUT", "/v1/tasks/shout", svc.admin, json=bad)).status_code == 422
        bad = {"public": SPEC, "hidden": [{"args": {"$set": [ARG]}, "expect": {"$nope": EXPECT}}]}
        assert (await call("PUT", "/v1/tasks/shout", svc.admin, json=bad)).status_code == 422
        for disclosure in ("cases", "counts", "verdict"):
            task = {"public": SPEC, "hidden": HIDDEN, "disclosure": disclosure}
            assert (await call("PUT", "/v1/tasks/shout", svc.admin, json=task)).is_success
            await call("GET", "/v1/tasks/shout", svc.admin)
            for name, code in HOSTILE.items():
                for mode in ("wait", "defer"):
                    body = {"id": name, "fn": "shout", "code": code, "judge": mode}
                    r = await call("POST", "/v1/grade", svc.grader, json=body)
                    assert r.status_code == 200, r.text
                    grade_id = r.json()["grade_id"]
                    await call(
                        "POST",
                        f"/v1/grades/{grade_id}/feedback",
                        svc.grader,
                        json={"accepted": True},
                    )
            samples = [{"id": n, "fn": "shout", "code": c} for n, c in HOSTILE.items()]
            r = await call("POST", "/v1/runs?judge=defer&static=true", svc.grader, json=samples)
            run_id = r.json()["id"]
            await svc.wait_run(run_id, svc.grader)
            with anyio.fail_after(30):
                while (await call("GET", f"/v1/runs/{run_id}", svc.grader)).json()["judge_pending"]:
                    await anyio.sleep(0.05)
            for who in (svc.grader, svc.admin):
                await call("GET", f"/v1/runs/{run_id}/results", who)
            await call("GET", f"/v1/grades/{grade_id}", svc.grader)
        await call("GET", "/v1/stats", svc.grader)
        await call("GET", "/v1/tokens", svc.admin)
        await call("GET", "/v1/rubrics/default", svc.admin)
        metrics = await call("GET", "/metrics", svc.admin)
    assert "gradebox_http_requests_total" in metrics.text
    assert endpoint.keys and all(k == f"Bearer {KEY}" for k in endpoint.keys)  # only there
    assert not any(ARG in r or EXPECT in r for r in endpoint.raw)  # the judge saw no case
    _clean("responses", "\n".join(seen))
    lines = logs.lines()
    assert any(line["message"] == "request" for line in lines)
    _clean("the log", logs.stream.getvalue())


async def test_request_ids_in_the_response_and_every_line(kit, logs):
    async with kit.running() as svc:
        mine = {**svc.grader, "X-Request-ID": "client-chosen.id_1"}
        r = await svc.client.post(
            "/v1/grade", json={"fn": "is_even", "code": "x = ("}, headers=mine
        )
        assert r.headers["x-request-id"] == "client-chosen.id_1"
        r = await svc.client.get("/healthz")
        fresh = r.headers["x-request-id"]
        assert len(fresh) == 16 and int(fresh, 16) >= 0
        # An id a client could use to forge or split log lines is replaced, not echoed.
        for hostile in (b'a"b', b"x" * 65, b"a b", "ü".encode("latin-1")):
            r = await svc.client.get("/healthz", headers={"X-Request-ID": hostile})
            echoed = r.headers["x-request-id"]
            assert echoed.encode() != hostile and len(echoed) == 16
        body = {"public": {"spec": "s"}, "hidden": [{"args": [1], "expect": 1}]}
        r = await svc.client.put("/v1/tasks/ident", json=body, headers=svc.admin)
        put_id = r.headers["x-request-id"]
    lines = logs.lines()
    # The grade's own lines (the request line; its 'front' work ran in another thread).
    of_grade = [x for x in lines if x["request_id"] == "client-chosen.id_1"]
    assert [x["route"] for x in of_grade if x["message"] == "request"] == ["/v1/grade"]
    of_put = [x["message"] for x in lines if x["request_id"] == put_id]
    assert any(m.startswith("task ident: revision 1") for m in of_put), of_put
    assert all({"time", "level", "logger", "message", "request_id"} <= set(x) for x in lines)
