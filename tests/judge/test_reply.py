"""The reply protocol, end to end: what each scripted reply leaves on the row.

Every case in ``cases/replies.jsonl`` goes through the real openai client and
the local server; a reply that breaks protocol must be ``needs_review`` with
its reason and the raw reply kept -- never a verdict, never a score.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import rubrics
from judge import reply_schema

CASES = [
    json.loads(line)
    for line in (Path(__file__).parent / "cases" / "replies.jsonl").read_text().splitlines()
]


def build_content(case: dict[str, Any], valid: dict[str, Any]) -> str | None:
    if "content" in case:
        return case["content"]
    reply = {**valid, **case.get("patch", {})}
    reply["scores"] = {**valid["scores"], **case.get("scores", {})}
    for key in case.get("drop", []):
        del reply[key]
    for cid in case.get("drop_scores", []):
        del reply["scores"][cid]
    return json.dumps(reply)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_protocol_breaks_are_needs_review_with_raw_kept(case, server, make_judge, item):
    content = build_content(case, server.valid())
    extra = {k: case[k] for k in ("finish_reason", "refusal") if k in case}
    server.push(server.ok(content, **extra))

    row = make_judge().judge_one(item()).to_row()

    assert row["status"] == "needs_review"
    assert row["reason_code"] == case["reason_code"]
    assert case["detail"] in row["reason"]
    assert row["raw"] == (content if content is not None else case.get("refusal"))
    assert (row["verdict"], row["scores"], row["weighted"]) == (None, {}, None)
    # The exchange is still recorded in full.
    assert row["model"] == "judge-model-2024"
    assert row["system_fingerprint"] == "fp_scripted"
    assert row["tokens"] == {"prompt": 321, "completion": 54}
    assert row["attempts"] == 1
    assert len(server.requests) == 1  # a bad reply is not retried: it is a reply


def test_valid_reply_is_scored_and_recorded(server, make_judge, item):
    reply = server.valid(verdict="mismatch", score=2)
    reply["issues"] = [
        {"line": 2, "severity": "error", "message": "No TypeError for non-int input."},
        {"line": None, "severity": "info", "message": "Short and clear."},
    ]
    server.push(server.ok_json(reply))

    result = make_judge().judge_one(item())
    row = result.to_row()

    assert result.status == "scored" and result.mismatch and not result.unscored
    assert row["verdict"] == "mismatch"
    assert row["unmet_requirements"] == ["rejects non-int input"]
    assert row["scores"] == dict.fromkeys(rubrics.load("default").criterion_ids, 2)
    assert row["weighted"] == pytest.approx(0.25)
    assert row["issues"][0] == {
        "line": 2,
        "severity": "error",
        "message": "No TypeError for non-int input.",
    }
    assert row["issues"][1]["line"] is None
    assert row["rationale"] == "Does what the specification asks."
    assert row["rubric"] == "default@1.0.0"
    assert (row["model"], row["system_fingerprint"]) == ("judge-model-2024", "fp_scripted")
    assert row["tokens"] == {"prompt": 321, "completion": 54}
    assert (row["cache_hit"], row["attempts"], row["mode"]) == (False, 1, "json_schema")
    assert row["reason_code"] is None and row["reason"] is None
    assert json.loads(row["raw"]) == reply
    assert row["latency_ms"] > 0
    assert len(row["key"]) == 64
    json.dumps(row)  # plain JSON


def test_quality_rubric_has_no_verdict(server, make_judge, item):
    result = make_judge().judge_one(item(rubric_name="quality"))
    schema = server.schema_of(server.requests[0].body)
    assert schema is not None
    assert "verdict" not in schema["properties"]
    assert result.status == "scored"
    assert result.verdict is None and not result.mismatch


def walk_objects(schema: Any):
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from walk_objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from walk_objects(value)


@pytest.mark.parametrize("name", ["intent", "quality", "default"])
def test_reply_schema_is_strict_mode_compatible(name):
    # OpenAI strict mode: every object closed, every property required.
    for obj in walk_objects(reply_schema(rubrics.load(name))):
        assert obj["additionalProperties"] is False
        assert set(obj["required"]) == set(obj["properties"])


def test_reply_schema_scores_follow_the_rubric():
    rubric = rubrics.load("intent")
    scores = reply_schema(rubric)["properties"]["scores"]
    assert scores["required"] == list(rubric.criterion_ids)
    assert all(p["enum"] == [1, 2, 3, 4, 5] for p in scores["properties"].values())
