"""``gradebox serve``'s judge options reach the judge's requests; its key never reaches a client.

A real ``gradebox serve`` process (``python -m gradebox.service serve``, the judge
configured from the environment with a canary key) in front of conftest's local
OpenAI-compatible endpoint (real sockets, the real openai client), which records
every request it gets. What the endpoint received is the evidence:
``--judge-repeat 3`` is three judgements of each item, ``--judge-extra-body`` keys
are in every request's JSON, ``--judge-max-tokens`` caps every request, and
``--judge-probes`` judges each rewrite of the candidate too. The key is in each
request's ``Authorization`` header and in no response, header or log line.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from serving import serve

KEY = "sk-canary-KEY-serve-judge-7f3e"
TASK = {
    "public": {"spec": "Return x plus one.", "signature": "def inc(x: int) -> int"},
    "hidden": [{"args": [1], "expect": 2}, {"args": [41], "expect": 42}],
    "disclosure": "cases",
}
CODE = "def inc(x: int) -> int:\n    # add one\n    y = x\n    return y + 1\n"
EXTRA = {"top_k": 7, "gradebox_test_tag": "extra-body-arrived"}


@pytest.fixture
def server(tmp_path: Path, endpoint):
    env = {
        "GRADEBOX_JUDGE_BASE_URL": endpoint.base_url,
        "GRADEBOX_JUDGE_MODEL": "judge-model",
        "GRADEBOX_JUDGE_API_KEY": KEY,
    }
    options = (
        "--no-judge-cache", "--static-sessions", "0",
        "--judge-repeat", "3", "--judge-extra-body", json.dumps(EXTRA),
        "--judge-max-tokens", "123", "--judge-probes",
    )  # fmt: skip
    with serve(tmp_path, env, *options) as served:
        yield served.url, served.admin, served.log


PROBE_ITEM = "def add(a: int, b: int)"
"""The capability probe's fixed item (:mod:`judge.capabilities`): not a judgement."""


def test_serves_judge_options_reach_every_judge_request(server, endpoint):
    url, admin, log = server
    seen: list[str] = []

    def call(method: str, path: str, **kw):
        r = httpx.request(method, url + path, headers=admin, timeout=120, **kw)
        seen.append(f"{r.status_code} {r.reason_phrase} {dict(r.headers)} {r.text}")
        return r

    assert call("PUT", "/v1/tasks/inc", json=TASK).status_code == 200
    before = len(endpoint.requests)
    row = call("POST", "/v1/grade", json={"id": "s1", "fn": "inc", "code": CODE,
                                          "judge": "wait"}).json()  # fmt: skip
    assert row["verdict"] == "pass", row
    judge = row["judge"]
    assert judge["status"] == "scored" and judge["verdict"] == "match"

    # --judge-repeat 3: three judgements of the candidate, and three of each rewrite.
    assert judge["repeat"]["verdicts"] == ["match"] * 3
    rewrites = {check["probe"] for check in judge["invariance"]}
    assert len(rewrites) >= 3, judge["invariance"]  # --judge-probes
    asked = endpoint.requests[before:]
    judged = [s.body for s in asked if PROBE_ITEM not in s.body["messages"][1]["content"]]
    assert len(judged) == 3 * (1 + len(rewrites)), [b["messages"][1]["content"] for b in judged]
    contents = {b["messages"][1]["content"] for b in judged}
    assert len(contents) == 1 + len(rewrites)  # the candidate and each rewrite, 3 times each

    # --judge-extra-body and --judge-max-tokens: in every request the endpoint received.
    for seen_request in endpoint.requests:
        body = seen_request.body
        assert {k: body.get(k) for k in EXTRA} == EXTRA, body
        assert 123 in (body.get("max_tokens"), body.get("max_completion_tokens")), body
        assert seen_request.headers["authorization"] == f"Bearer {KEY}"

    # The key: in no reply, header or status line the client saw, nor in the server's log.
    assert call("GET", f"/v1/grades/{row['grade_id']}").json()["judge"] == judge
    call("GET", "/metrics")
    assert all(KEY not in text and KEY[:12] not in text for text in seen)
    assert KEY not in log.read_text()
