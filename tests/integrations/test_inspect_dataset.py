"""The dataset, the scorer's checks, what a row shows, the import boundary, the entry point."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gradebox.errors import BadInput
from gradebox.grade import Grade
from gradebox.integrations.inspect import (
    explanation,
    gradebox_dataset,
    gradebox_scorer,
    shown_row,
)
from gradebox.sampling import DEFAULT_TEMPLATE


def test_one_sample_per_task_from_the_public_file_alone(taskset):
    (taskset / "hidden.jsonl").unlink()  # a dataset never reads the hidden cases
    samples = list(gradebox_dataset(taskset))
    assert [s.id for s in samples] == ["is_even", "mean", "worker"]
    first = samples[0]
    assert first.metadata == {"task": "is_even", "fn": "is_even"}
    assert "Reject non-int input" in first.input
    assert "def is_even(n: int) -> bool" in first.input
    assert first.target in ("", [])  # nothing of the hidden cases, not even a target
    assert [s.id for s in gradebox_dataset(taskset / "public.jsonl")] == [s.id for s in samples]
    assert DEFAULT_TEMPLATE.splitlines()[0].replace("$fn", "is_even") in first.input


def test_no_hidden_case_reaches_a_sample(taskset):
    hidden = (taskset / "hidden.jsonl").read_text()
    assert "hidden-only-marker-7f3a" in hidden
    for s in gradebox_dataset(taskset):
        shown = json.dumps([s.input, s.metadata, s.target, s.choices])
        assert "hidden-only-marker-7f3a" not in shown
        assert "-4" not in shown  # a hidden argument that no public field has


def test_a_prompt_template_uses_the_sampling_placeholders(taskset):
    [first, *_] = gradebox_dataset(taskset, prompt_template="$task|$fn|$signature")
    assert first.input == "is_even|is_even|def is_even(n: int) -> bool"
    with pytest.raises(BadInput, match="prompt_template"):
        gradebox_dataset(taskset, prompt_template="$hidden")


def test_bad_options_and_task_sets_fail_before_any_worker_starts(taskset, tmp_path):
    with pytest.raises(BadInput, match="judge"):
        gradebox_scorer(taskset, judge="later")  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="disclosure"):
        gradebox_scorer(taskset, disclosure="all")  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="isolation"):
        gradebox_scorer(taskset, isolation="docker")
    with pytest.raises(BadInput, match="no task set"):
        gradebox_scorer(tmp_path / "missing")
    (taskset / "hidden.jsonl").write_text('{"fn": "other", "args": [1], "expect": 1}\n')
    with pytest.raises(BadInput, match="no hidden cases"):
        gradebox_scorer(taskset)


ROW = {
    "id": "is_even#0",
    "task": "is_even",
    "fn": "is_even",
    "pass": False,
    "verdict": "fail",
    "reason": "hidden_tests",
    "failed": [1, 2],
    "timeouts": [],
    "outcomes": ["ok", "wrong", "error", "ok"],
    "gate": {"syntax": "ok", "banned": [], "contract": "ok"},
    "claim": "none",
    "latency_ms": 41.2,
    "infra_error": None,
    "static": None,
    "judge": None,
}


def test_metadata_and_explanation_follow_the_disclosure():
    grade = Grade.from_row(ROW)
    assert shown_row(grade, "cases") == ROW  # what gradebox grade writes
    counts = shown_row(grade, "counts")
    assert "outcomes" not in counts and "failed" not in counts
    assert counts["counts"] == {"passed": 2, "failed": 2, "timed_out": 0}
    verdict = shown_row(grade, "verdict")
    assert verdict["verdict"] == "fail" and "counts" not in verdict and "outcomes" not in verdict
    assert verdict["latency_ms"] is None
    assert explanation(grade, "cases") == "fail (hidden_tests); 2 of 4 hidden cases ok; " + (
        "cases 1 wrong, 2 error"
    )
    assert explanation(grade, "counts") == "fail (hidden_tests); 2 of 4 hidden cases ok"
    assert explanation(grade, "verdict") == "fail (hidden_tests)"


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter started in ``cwd``.

    Not in the source tree: there ``python -c`` would find the tree's own
    ``gradebox.egg-info`` before the installed metadata, and inspect names a
    package's objects after the installed metadata it finds.
    """
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_gradebox_never_imports_inspect_ai_and_inspect_finds_gradebox_by_name(
    taskset, tmp_path, reply
):
    """In a fresh interpreter: gradebox (the CLI, the engine) loads no inspect_ai; then
    inspect evaluates ``gradebox/taskset``, which only the entry point registers."""
    right = reply("is_even", "right")
    out = _run(
        f"""
        import sys
        import gradebox, gradebox.cli, gradebox.integrations, gradebox.integrations.engine
        from gradebox import Grader
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "inspect_ai")
        assert not loaded, loaded

        from inspect_ai import eval
        from inspect_ai.model import ModelOutput, ModelUsage, get_model

        assert "gradebox.integrations.inspect" not in sys.modules
        def answer(*_):
            out = ModelOutput.from_content(model="mockllm/model", content={right!r})
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            return out

        model = get_model("mockllm/model", custom_outputs=answer)
        args = {{"tasks": {str(taskset)!r}, "static": False, "jobs": 1}}
        [log] = eval("gradebox/taskset", task_args=args, model=model,
                     log_dir={str(tmp_path / "logs")!r}, display="none", limit=1)
        assert log.status == "success", log.error
        [sample] = log.samples
        print(sample.id, next(iter(sample.scores.values())).value)
        """,
        tmp_path,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "is_even C"


def test_the_docs_task_builds_on_a_task_set(taskset):
    page = (Path(__file__).resolve().parents[2] / "docs/guides/inspect.md").read_text()
    section = page[page.index("# Inside inspect_ai") :]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.splitlines()) <= 10
    scope: dict[str, object] = {}
    exec(compile(code.replace("/tmp/he", str(taskset)), "inspect.md", "exec"), scope)
    task = scope["humaneval"]()  # type: ignore[operator]
    assert [s.id for s in task.dataset] == ["is_even", "mean", "worker"]
    assert task.epochs == 5 and len(task.epochs_reducer) == 2
