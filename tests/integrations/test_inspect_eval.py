"""An inspect eval scored by gradebox gives the rows ``gradebox grade`` gives on the same replies.

Right, wrong, two-block and hostile replies go through a real inspect eval
(``mockllm/model``), with the static layers on; the eval log is read back with
``read_eval_log`` and each sample's row is compared with what ``gradebox grade``
writes for the same reply. The hostile reply reads the hidden cases, writes
outside its scratch directory and looks for a secret in its environment: it is
contained exactly as in ``gradebox grade`` (same row, nothing written).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset
from inspect_ai.log import read_eval_log
from inspect_ai.solver import generate

from gradebox.cli import cli
from gradebox.integrations.inspect import VALUES, gradebox_dataset, gradebox_scorer


def _without_latency(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "latency_ms"}


def _grade(taskset: Path, samples: list[dict[str, Any]], tmp_path: Path) -> dict[str, dict]:
    """``gradebox grade`` (static layers on, no judge) on ``samples``; rows by id."""
    path, out = tmp_path / "samples.jsonl", tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    args = ["grade", "--hidden", str(taskset / "hidden.jsonl"), "--public"]
    args += [str(taskset / "public.jsonl"), "--samples", str(path), "--out", str(out)]
    args += ["--no-judge", "--isolation", "bwrap", "--jobs", "2"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {row["id"]: row for row in rows}


def test_scores_and_rows_equal_gradebox_grade_on_the_same_replies(
    taskset, tmp_path, reply, mock_model, log_dir, monkeypatch
):
    monkeypatch.setenv("GBX_INSPECT_SECRET", "s3cret")  # the candidate must not see it
    marker = tmp_path / "escaped.txt"
    hostile = reply("mean", "hostile", HIDDEN=str(taskset / "hidden.jsonl"), MARKER=str(marker))
    replies = {
        "is_even": [reply("is_even", name) for name in ("right", "wrong", "two_blocks")],
        "mean": [hostile, reply("mean", "right"), reply("mean", "wrong")],
    }
    dataset = MemoryDataset([s for s in gradebox_dataset(taskset) if s.id in replies])
    task = Task(
        dataset=dataset,
        solver=generate(),
        scorer=gradebox_scorer(taskset, jobs=2),
        epochs=3,
    )
    [log] = inspect_eval(
        task, model=mock_model(dataset, replies), log_dir=str(log_dir), display="none"
    )
    assert log.status == "success", log.error
    samples = read_eval_log(log.location).samples or []
    assert len(samples) == 6

    scores = {}
    for s in samples:
        [score] = s.scores.values()
        row = score.metadata
        assert row["id"] == f"{s.id}#{s.epoch - 1}"
        scores[row["id"]] = (score, s.output.completion)
    cli_rows = _grade(
        taskset,
        [{"id": rid, "fn": rid.split("#")[0], "reply": text} for rid, (_, text) in scores.items()],
        tmp_path,
    )
    for rid, (score, _) in scores.items():
        assert _without_latency(score.metadata) == _without_latency(cli_rows[rid]), rid
        assert score.value == VALUES[cli_rows[rid]["verdict"]]
        assert score.explanation.startswith(cli_rows[rid]["verdict"])

    by_reply = {text: score for score, text in scores.values()}
    reasons = {by_reply[r].metadata["reason"] for r in replies["is_even"]}
    assert reasons == {"ok", "hidden_tests", "contract"}  # right, wrong, two blocks
    assert by_reply[replies["is_even"][0]].value == "C"
    assert "def is_even" in (by_reply[replies["is_even"][0]].answer or "")
    assert by_reply[replies["is_even"][2]].answer is None  # two blocks: nothing extracted
    assert by_reply[replies["is_even"][2]].metadata["gate"]["contract"] == "multiple_blocks"

    # Contained: it read no hidden case and no secret (every case behaves as a plain
    # mean), wrote nothing outside its scratch directory.
    contained = by_reply[hostile].metadata
    assert contained["outcomes"] == ["ok", "ok", "ok"], contained
    assert contained["static"] is not None
    assert not marker.exists()


@pytest.fixture
def judge_server(monkeypatch, tmp_path):
    """A local OpenAI-compatible judge that finds every candidate a mismatch."""
    from openai_server import Scripted, ScriptedServer, answer

    srv = ScriptedServer().start()
    srv.responder = lambda body: Scripted(200, answer(body, verdict="mismatch"))
    monkeypatch.setenv("GRADEBOX_JUDGE_BASE_URL", srv.base_url)
    monkeypatch.setenv("GRADEBOX_JUDGE_API_KEY", "test-key")
    monkeypatch.setenv("GRADEBOX_JUDGE_MODEL", "judge-model-2024")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-inspect"))
    yield srv
    srv.stop()


def test_judge_wait_annotates_before_scoring_and_needs_review_is_r(
    taskset, tmp_path, reply, mock_model, log_dir, judge_server, monkeypatch
):
    replies = {"is_even": [reply("is_even", "right")]}
    dataset = MemoryDataset([s for s in gradebox_dataset(taskset) if s.id in replies])
    task = Task(
        dataset=dataset,
        solver=generate(),
        scorer=gradebox_scorer(taskset, static=False, judge="wait", jobs=1),
    )
    [log] = inspect_eval(
        task, model=mock_model(dataset, replies), log_dir=str(log_dir), display="none"
    )
    assert log.status == "success", log.error
    [sample] = read_eval_log(log.location).samples or []
    [score] = sample.scores.values()
    assert score.value == "R"  # every case ok, the judge disagrees: needs_review
    assert score.metadata["verdict"] == "needs_review"
    assert score.metadata["reason"] == "judge:mismatch"
    assert score.metadata["judge"]["status"] == "scored"
    [metric] = [m for s in log.results.scores for m in s.metrics.values() if m.name == "accuracy"]
    assert metric.value == 0.0  # R is not a pass

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-cli"))  # no cached replies
    path, out = tmp_path / "samples.jsonl", tmp_path / "results.jsonl"
    path.write_text(
        json.dumps({"id": "is_even#0", "fn": "is_even", "reply": replies["is_even"][0]})
    )
    args = ["grade", "--hidden", str(taskset / "hidden.jsonl"), "--public"]
    args += [str(taskset / "public.jsonl"), "--samples", str(path), "--out", str(out)]
    res = CliRunner().invoke(cli, [*args, "--no-static", "--jobs", "1"])
    assert res.exit_code == 0, res.output
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    for r in (row, score.metadata):
        r.pop("latency_ms")
        r["judge"].pop("latency_ms")
    assert score.metadata == row
