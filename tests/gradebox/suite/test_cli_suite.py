"""`gradebox suite check` and `gradebox suite grow` through click's CliRunner, real sandbox."""

from __future__ import annotations

import json
import shutil

import click
import pytest
from click.testing import CliRunner

from gradebox.cli.suite import suite
from sandbox.cases import load_hidden

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


@click.group()
def cli() -> None:
    """Stands in for the gradebox group (which registers ``suite`` the same way)."""


cli.add_command(suite)


def _check(*args):
    return CliRunner().invoke(cli, ["suite", "check", *map(str, args)])


def test_examples_exit_0_with_a_readable_report(examples_dir):
    res = _check(
        "--hidden",
        examples_dir / "hidden.jsonl",
        "--public",
        examples_dir / "public.jsonl",
        "--reference",
        examples_dir / "reference.jsonl",
    )
    assert res.exit_code == 0, res.output
    assert "suite check: 5 tasks, 5 trustworthy, 0 not; 3 warnings" in res.stdout
    assert "fib: trustworthy (5 cases)" in res.stdout
    assert "W SC006 prompt-leak: case 0 (line 10) appears in public example 0" in res.stdout


def test_fail_on_leaks_makes_the_examples_fail(examples_dir):
    res = _check(
        "--hidden",
        examples_dir / "hidden.jsonl",
        "--public",
        examples_dir / "public.jsonl",
        "--reference",
        examples_dir / "reference.jsonl",
        "--runs",
        2,
        "--fail-on-leaks",
        "--json",
    )
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    assert {t["fn"] for t in report["tasks"] if not t["trustworthy"]} == {"split_pair", "fib"}


def test_weak_suite_exits_1_and_json_lists_the_findings(suites_dir):
    weak = suites_dir / "weak"
    res = _check(
        "--hidden",
        weak / "hidden.jsonl",
        "--public",
        weak / "public.jsonl",
        "--reference",
        weak / "reference.jsonl",
        "--json",
    )
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    assert report["trustworthy"] is False
    codes = [(f["fn"], f["code"]) for t in report["tasks"] for f in t["findings"]]
    assert codes == [("dedupe", "SC004"), ("is_adult", "SC005"), ("is_odd", "SC003")]
    adult = report["tasks"][1]["mutation"]
    survivor = [m for m in adult["mutants"] if m["status"] == "survived"]
    assert survivor[0]["diff"].endswith("+    return age >= 17\n")


def test_bad_input_exits_2_naming_every_file_and_line(tmp_path, examples_dir):
    hidden = tmp_path / "hidden.jsonl"
    hidden.write_text('{"fn": "f", "args": [1], "expect": 1}\n{"fn": "f", "args": 1}\n')
    ref = tmp_path / "reference.jsonl"
    ref.write_text('{"fn": "f", "code": "def f(:"}\n')
    res = _check("--hidden", hidden, "--reference", ref)
    assert res.exit_code == 2
    assert f"{hidden}:2: args" in res.stderr
    assert f"{ref}:1: code: syntax error" in res.stderr


def test_a_reference_for_an_unknown_task_is_bad_input(tmp_path):
    hidden = tmp_path / "hidden.jsonl"
    hidden.write_text('{"fn": "f", "args": [1], "expect": 1}\n')
    ref = tmp_path / "reference.jsonl"
    ref.write_text(
        '{"fn": "f", "code": "def f(x):\\n    return x\\n"}\n'
        '{"fn": "g", "code": "def g(x):\\n    return x\\n"}\n'
    )
    res = _check("--hidden", hidden, "--reference", ref)
    assert res.exit_code == 2
    assert f"{ref}:2: fn: 'g' has no hidden cases in {hidden}" in res.stderr


def test_grow_writes_reviewable_hidden_lines(tmp_path, suites_dir):
    props = suites_dir / "props"
    out = tmp_path / "new.jsonl"
    res = CliRunner().invoke(
        cli,
        [
            "suite",
            "grow",
            "--hidden",
            str(props / "hidden.jsonl"),
            "--properties",
            str(props / "properties.jsonl"),
            "--reference",
            str(props / "reference.jsonl"),
            "--out",
            str(out),
            "--seed",
            "3",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "review them before adding them to the suite" in res.stderr
    record = json.loads(res.stdout)
    assert record["seed_override"] == 3 and record["written"] > 40
    cases, _ = load_hidden(out)
    assert len(cases) == record["written"]
    assert all(c.name.startswith("property:") for c in cases)
    again = tmp_path / "again.jsonl"
    CliRunner().invoke(
        cli,
        [
            "suite",
            "grow",
            "--hidden",
            str(props / "hidden.jsonl"),
            "--properties",
            str(props / "properties.jsonl"),
            "--reference",
            str(props / "reference.jsonl"),
            "--out",
            str(again),
            "--seed",
            "3",
        ],
    )
    assert again.read_text() == out.read_text()  # same seed, same lines


def test_grow_bad_input_exits_2(tmp_path, suites_dir):
    props = suites_dir / "props"
    bad = tmp_path / "properties.jsonl"
    bad.write_text(
        '{"fn": "absolute", "args": [{"int": {"min": 3, "max": 1}}]}\n'
        '{"fn": "missing", "args": []}\n'
    )
    res = CliRunner().invoke(
        cli,
        [
            "suite",
            "grow",
            "--hidden",
            str(props / "hidden.jsonl"),
            "--properties",
            str(bad),
            "--reference",
            str(props / "reference.jsonl"),
            "--out",
            str(tmp_path / "out.jsonl"),
        ],
    )
    assert res.exit_code == 2
    assert f"{bad}:1: int: min (3) is greater than max (1)" in res.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_help_explains_with_an_example():
    res = CliRunner().invoke(cli, ["suite", "check", "--help"])
    assert res.exit_code == 0 and "Example:" in res.output and "--reference" in res.output
    res = CliRunner().invoke(cli, ["suite", "grow", "--help"])
    assert res.exit_code == 0 and "Example:" in res.output and "sampled_from" in res.output
