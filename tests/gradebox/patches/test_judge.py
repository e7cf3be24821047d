"""The judge on intent: a real local OpenAI-compatible endpoint, the real client, patch rubric."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import rubrics
from gradebox.patches import TestIds, run_gate
from judge import Judge, JudgeConfig

HIDDEN_MARK = "HIDDEN_TEST_CANARY_7f3a"


class Endpoint:
    """``POST /v1/chat/completions`` answering a valid reply for the schema it was asked for."""

    def __init__(self, verdict: str) -> None:
        self.verdict = verdict
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
                content = json.dumps(outer.reply(schema or {}))
                data = json.dumps({
                    "id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def reply(self, schema: dict[str, Any]) -> dict[str, Any]:
        props = schema.get("properties", {})
        out: dict[str, Any] = {}
        if "verdict" in props:
            out["verdict"] = self.verdict
            out["unmet_requirements"] = [] if self.verdict == "match" else ["divide by n"]
        out["scores"] = dict.fromkeys(props.get("scores", {}).get("required", []), 4)
        out["issues"] = []
        out["rationale"] = "The diff changes the divisor as the request says."
        return out


@pytest.fixture(params=["match", "mismatch"])
def endpoint(request) -> Iterator[Endpoint]:
    ep = Endpoint(request.param)
    yield ep
    ep.httpd.shutdown()


def test_the_patch_rubric_ships_with_stable_ids():
    rubric = rubrics.load("patch")
    assert rubric.criterion_ids == ("PAT001", "PAT002", "PAT003", "PAT004")
    assert rubric.verdict and all(c.what and c.why and c.example for c in rubric.criteria)


def test_the_judge_annotates_and_never_decides(repo, config, spec, fix, endpoint):
    hidden = repo.patch(
        lambda root: (root / "tests" / "test_hidden.py").write_text(
            f"# {HIDDEN_MARK}\nfrom calc.ops import mean\n\n\ndef test_one():\n"
            "    assert mean([4]) == 4\n"
        )
    )
    ids = TestIds(("tests/test_ops.py::test_mean", "tests/test_hidden.py::test_one"), "auto")
    gate = spec(repo, repo.patch(fix), tests=ids, test_patch=hidden,
                intent="mean() divides by n + 1; it must divide by n")  # fmt: skip
    cfg = JudgeConfig(base_url=endpoint.url, model="m", api_key="sk-test", no_cache=True)
    with Judge(cfg) as judge:
        row = run_gate(gate, config, judge).to_row()
    assert row["judge"]["status"] == "scored", row["judge"]
    assert row["judge"]["verdict"] == endpoint.verdict
    assert (row["verdict"], row["reason"]) == ("pass", "ok")  # whatever the judge says
    asked = json.dumps(endpoint.bodies[-1])
    assert "it must divide by n" in asked and "len(xs)" in asked
    assert HIDDEN_MARK not in json.dumps(endpoint.bodies)  # the hidden tests never go out
    assert "F2P" not in asked and "passed" not in asked
