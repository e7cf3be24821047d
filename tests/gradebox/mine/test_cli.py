"""``gradebox mine`` through CliRunner; its instances graded by ``gradebox gate --swebench``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gradebox.cli import cli
from gradebox.patches.inputs import load_swebench


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["mine", *args], catch_exceptions=False)


def test_help_explains_with_an_example() -> None:
    res = run("--help")
    assert res.exit_code == 0
    assert "gradebox mine --repo" in res.output and "--swebench" in res.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--rev-range", "a...b"], "symmetric"),
        (["--rev-range", "nope..main"], "not a commit"),
        (["--repo-name", "no-slash"], "OWNER/NAME"),
        (["--out", "{repo}/.git/instances.jsonl"], "never writes into the repository"),
    ],
    ids=["symmetric-range", "unknown-revision", "bad-repo-name", "out-inside-git"],
)
def test_bad_input_exits_2_before_any_work(
    history: Any, tmp_path: Path, extra: list[str], message: str
) -> None:
    before = history.hash()
    args = ["--repo", str(history.root), "--out", str(tmp_path / "i.jsonl")]
    args += [a.replace("{repo}", str(history.root)) for a in extra]
    res = run(*args)
    assert res.exit_code == 2, res.output
    assert "bad input" in res.stderr and message in res.stderr
    assert history.hash() == before


def test_not_a_repository_exits_2(tmp_path: Path) -> None:
    res = run("--repo", str(tmp_path), "--out", str(tmp_path / "i.jsonl"))
    assert res.exit_code == 2 and "not a git repository" in res.stderr


def test_mined_instances_are_graded_by_the_gate(
    history: Any, env_cache: Path, tmp_path: Path
) -> None:
    fix = history.fix_mean()
    history.commit("docs", {"README.md": "calc\n"})
    before = history.hash()
    out, rep = tmp_path / "instances.jsonl", tmp_path / "report.json"
    res = run(
        "--repo", str(history.root), "--repo-name", "acme/calc", "--out", str(out),
        "--report", str(rep), "--env-cache", str(env_cache), "--runs", "1", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert history.hash() == before
    assert "[1/3]" in res.stderr and "dropped (no_tests)" in res.stderr
    assert "kept: F2P 1, P2P 1" in res.stderr and "3 commit(s) seen, 1 kept" in res.stderr
    summary = json.loads(res.stdout)
    assert (summary["commits_seen"], summary["kept"]) == (3, 1)
    assert summary["dropped"]["root_commit"] == 1 and "commits" not in summary
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["instance_id"] == f"acme__calc-{fix[:12]}" and row["repo"] == "acme/calc"
    assert row["base_commit"] == history.git("rev-parse", f"{fix}~1").strip()
    assert row["FAIL_TO_PASS"] == ["tests/test_ops.py::test_mean"]
    assert row["PASS_TO_PASS"] == ["tests/test_ops.py::test_add"]
    assert row["created_at"] == "2024-01-31T11:00:00Z"
    assert row["environment_setup"]["lockfile"] is None and row["environment_setup"]["python"]
    assert "calc/ops.py" in row["patch"] and "tests/" not in row["patch"]
    assert "tests/test_ops.py" in row["test_patch"] and "calc/" not in row["test_patch"]
    report = json.loads(rep.read_text())
    assert [c["reason"] for c in report["commits"]] == ["no_tests", None, "root_commit"]

    # How a team uses it: a clone named owner__name, predictions, the gate.
    clones = tmp_path / "clones"
    clones.mkdir()
    subprocess.run(["git", "clone", "-q", str(history.root), str(clones / "acme__calc")],
                   check=True, capture_output=True)  # fmt: skip
    preds = tmp_path / "preds.jsonl"
    iid = row["instance_id"]
    wrong = row["patch"].replace("+    return sum(xs) / len(xs)", "+    return sum(xs) / 2")
    preds.write_text(
        json.dumps({"instance_id": iid, "model_patch": row["patch"]}) + "\n"
        + json.dumps({"instance_id": iid, "model_patch": wrong}) + "\n"
    )  # fmt: skip
    specs = load_swebench(out, preds, clones)
    assert [s.tests.fail_to_pass for s in specs] == [("tests/test_ops.py::test_mean",)] * 2
    gated = tmp_path / "gate.jsonl"
    res = CliRunner().invoke(
        cli,
        ["gate", "--swebench", str(out), "--predictions", str(preds), "--repos", str(clones),
         "--no-static", "--base-runs", "1", "--env-cache", str(env_cache), "--out", str(gated)],
        catch_exceptions=False,
    )  # fmt: skip
    assert res.exit_code == 1, res.output  # the wrong patch fails
    rows = [json.loads(line) for line in gated.read_text().splitlines()]
    assert [(r["verdict"], r["resolved"]) for r in rows] == [("pass", True), ("fail", False)]


@pytest.mark.parametrize(
    ("folder", "name"),
    [("acme__calc", "acme/calc"), ("calc", "local/calc"), ("a__b__c", "a/b__c"),
     ("__calc", "local/__calc")],
)  # fmt: skip
def test_the_default_repo_name_follows_the_gates_clone_folders(
    tmp_path: Path, folder: str, name: str
) -> None:
    from gradebox.cli.mine import _default_name

    assert _default_name(tmp_path / folder) == name


def test_a_given_environment_that_is_not_one_exits_2(history: Any, tmp_path: Path) -> None:
    res = run("--repo", str(history.root), "--out", str(tmp_path / "i.jsonl"),
              "--env", str(tmp_path))  # fmt: skip
    assert res.exit_code == 2 and "cannot start" in res.stderr and "bin/python" in res.stderr
