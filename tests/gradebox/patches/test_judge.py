"""The judge on intent: a real local OpenAI-compatible endpoint, the real client, patch rubric."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from openai_server import Scripted, ScriptedServer, completion, schema_of

import rubrics
from gradebox.patches import TestIds, run_gate
from judge import Judge, JudgeConfig

HIDDEN_MARK = "HIDDEN_TEST_CANARY_7f3a"


class Endpoint:
    """``POST /v1/chat/completions`` answering a valid reply for the schema it was asked for."""

    def __init__(self, verdict: str) -> None:
        self.verdict = verdict
        self.server = ScriptedServer()
        self.server.responder = self._respond
        self.url = self.server.start().base_url

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return self.server.bodies()

    def _respond(self, body: dict[str, Any]) -> Scripted:
        content = json.dumps(self.reply(schema_of(body) or {}))
        return Scripted(
            200, completion(content, model=body["model"], fingerprint=None, usage=(10, 5))
        )

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
    ep.server.stop()


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
