"""`gradebox grade` through click's CliRunner, on the real default sandbox."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from waiting import retry_starved

from gradebox.cli import cli

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
BAD = [
    json.loads(line) for line in (ROOT / "tests/cases/bad_inputs.jsonl").read_text().splitlines()
]


@pytest.fixture(scope="module", autouse=True)
def _no_judge_endpoint():
    """These runs never reach a judge, whatever the developer's environment holds."""
    with pytest.MonkeyPatch.context() as mp:
        for name in (
            "GRADEBOX_JUDGE_BASE_URL",
            "GRADEBOX_JUDGE_API_KEY",
            "GRADEBOX_JUDGE_MODEL",
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
        ):
            mp.delenv(name, raising=False)
        yield


def _write(path: Path, text: str | None) -> None:
    if text is not None:
        path.write_bytes(text.encode("utf-8", "surrogateescape"))


@pytest.mark.parametrize("row", BAD, ids=[r["id"] for r in BAD])
def test_bad_input_exits_2_with_file_and_line_and_writes_nothing(tmp_path, row):
    _write(tmp_path / "hidden.jsonl", row["hidden"])
    _write(tmp_path / "samples.jsonl", row["samples"])
    args = [
        "grade",
        "--hidden",
        str(tmp_path / "hidden.jsonl"),
        "--samples",
        str(tmp_path / "samples.jsonl"),
        "--out",
        str(tmp_path / "out.jsonl"),
    ]
    if row.get("public") is not None:
        _write(tmp_path / "public.jsonl", row["public"])
        args += ["--public", str(tmp_path / "public.jsonl")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, res.output
    for fragment in row["expect"]:
        assert fragment in res.stderr, res.stderr
    assert not (tmp_path / "out.jsonl").exists(), "nothing may be written on bad input"


def test_skip_bad_lines_grades_the_good_ones_and_reports_the_bad(tmp_path):
    (tmp_path / "h.jsonl").write_text('{"fn": "inc", "args": [1], "expect": 2}\n')
    (tmp_path / "s.jsonl").write_text(
        '{"id": "a", "fn": "inc", "code": "def inc(x):\\n    return x + 1\\n"}\n'
        '{"id": "b", "fn": "inc"}\n'
    )
    res = CliRunner().invoke(
        cli,
        [
            "grade",
            "--hidden",
            str(tmp_path / "h.jsonl"),
            "--samples",
            str(tmp_path / "s.jsonl"),
            "--skip-bad-lines",
            "--jobs",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["a"]
    assert "s.jsonl:2:" in res.stderr and "skipped" in res.stderr


@pytest.fixture(scope="module")
def example_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "results.jsonl"
    res = CliRunner().invoke(
        cli,
        [
            "grade",
            "--hidden",
            str(EXAMPLES / "hidden.jsonl"),
            "--public",
            str(EXAMPLES / "public.jsonl"),
            "--samples",
            str(EXAMPLES / "samples.jsonl"),
            "--out",
            str(out),
            "--jobs",
            "2",
        ],
    )
    assert res.exit_code == 0, res.output
    return {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}, res.stderr


def test_examples_verdicts_and_reasons(example_rows):
    rows, _ = example_rows
    expected = {
        "even-good": ("pass", "ok"),
        "even-naive": ("fail", "hidden_tests"),
        "even-int-not-bool": ("fail", "hidden_tests"),
        "even-loop-claims-o1": ("fail", "claim_false"),
        "mean-good": ("pass", "ok"),
        "mean-int-division": ("fail", "hidden_tests"),
        "mean-zerodiv": ("fail", "hidden_tests"),
        "split-good": ("pass", "ok"),
        "split-list-not-tuple": ("fail", "hidden_tests"),
        "split-two-blocks": ("fail", "contract"),
        "fib-good": ("pass", "ok"),
        "fib-exponential": ("fail", "hidden_tests"),
        "fib-shells-out": ("fail", "gate:banned_import"),
        "fib-syntax-error": ("fail", "gate:syntax"),
        "dedupe-good": ("pass", "ok"),
        "dedupe-set-order": ("fail", "hidden_tests"),
        "dedupe-hangs": ("fail", "hidden_tests"),
    }
    assert {k: (r["verdict"], r["reason"]) for k, r in rows.items()} == expected


def test_examples_outcomes_are_type_strict(example_rows):
    rows, _ = example_rows
    # returns 1/0 instead of True/False: wrong; bool input not rejected: error
    assert rows["even-int-not-bool"]["outcomes"] == ["wrong", "wrong", "wrong", "not_raised", "ok"]
    # list instead of tuple is wrong
    assert rows["split-list-not-tuple"]["outcomes"] == ["wrong", "wrong", "wrong", "ok"]
    # naive is_even accepts True and 2.0 instead of raising TypeError
    assert rows["even-naive"]["outcomes"] == ["ok", "ok", "ok", "not_raised", "not_raised"]
    assert rows["mean-zerodiv"]["outcomes"][3] == "error"  # ZeroDivisionError is not ValueError


def test_examples_timeouts_are_counted_separately(example_rows):
    rows, summary = example_rows
    assert rows["fib-exponential"]["timeouts"] == [3]
    assert rows["fib-exponential"]["failed"] == []
    # after its first timeout a candidate is stopped (--max-timeouts 1): the rest is not run
    assert rows["dedupe-hangs"]["outcomes"] == ["ok", "timeout", "not_run"]
    assert "samples with timeouts 2" in summary


def test_rows_never_carry_hidden_values(example_rows):
    rows, summary = example_rows
    text = json.dumps(rows) + summary
    # distinctive expected values and arguments of examples/hidden.jsonl
    for secret in (
        "222232244629420445529739893461909967206666939096499764990979600",
        "k=v=w",
        "v=w",
        "0.15",
    ):
        assert secret not in text


def test_summary_states_k_and_n(example_rows):
    _, summary = example_rows
    assert "pass@1 (k=1" in summary
    assert "is_even     n=4" in summary


def test_explain_reveals_failed_cases_only_when_asked(tmp_path):
    (tmp_path / "h.jsonl").write_text(
        '{"fn": "inc", "args": [41], "expect": 42}\n{"fn": "inc", "args": [1], "expect": 2}\n'
    )
    (tmp_path / "s.jsonl").write_text(
        '{"id": "a", "fn": "inc", "code": "def inc(x):\\n    return 2 if x == 1 else 0\\n"}\n'
    )
    base = ["grade", "--hidden", str(tmp_path / "h.jsonl"), "--samples", str(tmp_path / "s.jsonl")]
    plain = CliRunner().invoke(cli, base)
    assert "42" not in plain.stdout
    explained = CliRunner().invoke(cli, [*base, "--explain"])
    row = json.loads(explained.stdout)
    assert row["explain"] == [
        {
            "case": 0,
            "name": None,
            "args": [41],
            "kwargs": {},
            "expect": 42,
            "got": 0,
            "outcome": "wrong",
            "detail": row["explain"][0]["detail"],
        }
    ]


def test_gate_flag_exits_1_when_any_sample_fails(tmp_path):
    (tmp_path / "h.jsonl").write_text('{"fn": "inc", "args": [1], "expect": 2}\n')
    (tmp_path / "s.jsonl").write_text(
        '{"id": "a", "fn": "inc", "code": "def inc(x):\\n    return x"}\n'
    )
    base = ["grade", "--hidden", str(tmp_path / "h.jsonl"), "--samples", str(tmp_path / "s.jsonl")]
    assert CliRunner().invoke(cli, base).exit_code == 0
    assert CliRunner().invoke(cli, [*base, "--gate"]).exit_code == 1


def test_banned_imports_option_overrides_default(tmp_path):
    (tmp_path / "h.jsonl").write_text('{"fn": "inc", "args": [1], "expect": 2}\n')
    (tmp_path / "s.jsonl").write_text(
        '{"id": "a", "fn": "inc", "code": "import math\\ndef inc(x):\\n    return x + 1"}\n'
        '{"id": "b", "fn": "inc", "code": "import os\\ndef inc(x):\\n    return x + 1"}\n'
    )
    base = ["grade", "--hidden", str(tmp_path / "h.jsonl"), "--samples", str(tmp_path / "s.jsonl")]
    default = [json.loads(x) for x in CliRunner().invoke(cli, base).stdout.splitlines()]
    assert [r["reason"] for r in default] == ["ok", "gate:banned_import"]
    custom = CliRunner().invoke(cli, [*base, "--banned-imports", "math"]).stdout.splitlines()
    assert [json.loads(x)["reason"] for x in custom] == ["gate:banned_import", "ok"]
    off = CliRunner().invoke(cli, [*base, "--banned-imports", ""]).stdout.splitlines()
    assert [json.loads(x)["reason"] for x in off] == ["ok", "ok"]


def test_help_has_an_example():
    res = CliRunner().invoke(cli, ["grade", "--help"])
    assert res.exit_code == 0
    assert "Example:" in res.output and "gradebox grade --hidden" in res.output


def test_max_timeouts_zero_runs_every_case_after_a_timeout(tmp_path):
    (tmp_path / "h.jsonl").write_text(
        "".join(
            f'{{"fn": "f", "args": [{i}], "expect": {i}, "timeout_s": 0.3}}\n' for i in range(4)
        )
    )
    code = "def f(x):\n    while x % 2:\n        pass\n    return x\n"
    (tmp_path / "s.jsonl").write_text(json.dumps({"id": "a", "fn": "f", "code": code}) + "\n")
    base = ["grade", "--hidden", str(tmp_path / "h.jsonl"), "--samples", str(tmp_path / "s.jsonl")]
    stop = json.loads(CliRunner().invoke(cli, base).stdout)
    assert stop["outcomes"] == ["ok", "timeout", "not_run", "not_run"]
    every = json.loads(CliRunner().invoke(cli, [*base, "--max-timeouts", "0"]).stdout)
    assert every["outcomes"] == ["ok", "timeout", "ok", "timeout"]
    assert every["timeouts"] == [1, 3]


PROPS = ROOT / "tests/cases/suites/props"


def test_reference_derives_case_limits_and_properties_add_cases(tmp_path):
    # wrong only for negative numbers; the fixed cases are all positive
    code = "def absolute(x):\n    return x\n"
    (tmp_path / "s.jsonl").write_text(
        json.dumps({"id": "a", "fn": "absolute", "code": code}) + "\n"
    )
    base = [
        "grade",
        "--hidden",
        str(PROPS / "hidden.jsonl"),
        "--samples",
        str(tmp_path / "s.jsonl"),
        "--reference",
        str(PROPS / "reference.jsonl"),
        "--no-static",
        "--no-judge",
        "--json",
    ]
    fixed = CliRunner().invoke(cli, base)
    assert fixed.exit_code == 0, fixed.output
    fixed_row = json.loads(fixed.stdout.splitlines()[0])
    summary = json.loads(fixed.stderr.strip().splitlines()[-1])
    assert summary["suite"]["limits"]["tasks"]["absolute"]["source"] == "reference"
    assert fixed_row["pass"] is True  # the fixed cases miss the bug
    grown = CliRunner().invoke(cli, [*base, "--properties", str(PROPS / "properties.jsonl")])
    assert grown.exit_code == 0, grown.output
    row = json.loads(grown.stdout.splitlines()[0])
    assert len(row["outcomes"]) > len(fixed_row["outcomes"])
    assert row["verdict"] == "fail" and row["failed"]
    again = CliRunner().invoke(cli, [*base, "--properties", str(PROPS / "properties.jsonl")])
    assert json.loads(again.stdout.splitlines()[0])["outcomes"] == row["outcomes"]  # seeded


def test_properties_without_reference_is_bad_input(tmp_path):
    res = CliRunner().invoke(
        cli,
        [
            "grade",
            "--hidden",
            str(PROPS / "hidden.jsonl"),
            "--samples",
            str(EXAMPLES / "samples.jsonl"),
            "--properties",
            str(PROPS / "properties.jsonl"),
        ],
    )
    assert res.exit_code == 2


def test_run_dir_keeps_everything_and_resumes_only_changed_samples(tmp_path):
    samples = tmp_path / "samples.jsonl"
    lines = (EXAMPLES / "samples.jsonl").read_text().splitlines()
    samples.write_text("\n".join(lines) + "\n")
    run = tmp_path / "run"
    base = [
        "grade",
        "--hidden",
        str(EXAMPLES / "hidden.jsonl"),
        "--public",
        str(EXAMPLES / "public.jsonl"),
        "--samples",
        str(samples),
        "--no-judge",
        "--no-static",
        "--run-dir",
        str(run),
    ]
    first = CliRunner().invoke(cli, base)
    assert first.exit_code == 0, first.output
    for name in ("results.jsonl", "summary.json", "manifest.json", "report.html", "junit.xml"):
        assert (run / name).exists(), name
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["isolation"]["backend"] == "bwrap"
    # change one sample: only it is graded again
    changed = json.loads(lines[4])  # mean-good
    changed["code"] = "def mean(xs):\n    return 0.0\n"
    del changed["reply"]
    lines[4] = json.dumps(changed)
    samples.write_text("\n".join(lines) + "\n")
    second = CliRunner().invoke(cli, base)
    assert second.exit_code == 0, second.output
    assert f"resuming: {len(lines) - 1} samples already graded" in second.stderr
    rows = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [json.loads(x)["id"] for x in lines]
    assert next(r for r in rows if r["id"] == "mean-good")["verdict"] == "fail"
    # a grading option changes every hash: everything is graded again
    third = CliRunner().invoke(cli, [*base, "--case-timeout", "1.5"])
    assert "resuming" not in third.stderr


def test_junit_and_html_reports_on_request(tmp_path):
    res = CliRunner().invoke(
        cli,
        [
            "grade",
            "--hidden",
            str(EXAMPLES / "hidden.jsonl"),
            "--samples",
            str(EXAMPLES / "samples.jsonl"),
            "--no-judge",
            "--no-static",
            "--junit",
            str(tmp_path / "j.xml"),
            "--html",
            str(tmp_path / "r.html"),
            "--out",
            str(tmp_path / "r.jsonl"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "<testsuite" in (tmp_path / "j.xml").read_text()
    assert "<html" in (tmp_path / "r.html").read_text().lower()


def test_explain_shows_a_shrunk_counterexample_for_a_generated_case(tmp_path):
    code = "def absolute(x):\n    return x\n"  # wrong only for negative x
    (tmp_path / "s.jsonl").write_text(
        json.dumps({"id": "a", "fn": "absolute", "code": code}) + "\n"
    )
    base = [
        "grade",
        "--hidden",
        str(PROPS / "hidden.jsonl"),
        "--samples",
        str(tmp_path / "s.jsonl"),
        "--reference",
        str(PROPS / "reference.jsonl"),
        "--properties",
        str(PROPS / "properties.jsonl"),
        "--no-static",
        "--no-judge",
    ]
    plain = json.loads(CliRunner().invoke(cli, base).stdout.splitlines()[0])
    assert "counterexample" not in plain  # hidden inputs only with --explain
    row = json.loads(CliRunner().invoke(cli, [*base, "--explain"]).stdout.splitlines()[0])
    ce = row["counterexample"]
    assert ce["case"] in row["failed"]
    assert ce["args"] == [-1] and ce["expect"] == 1  # the smallest negative input


def test_skip_bad_lines_never_drops_hidden_cases(tmp_path):
    (tmp_path / "h.jsonl").write_text(
        '{"fn": "inc", "args": [1], "expect": 2}\n{"fn": "inc", "args": [2], "expect": \n'
    )
    (tmp_path / "s.jsonl").write_text(
        '{"id": "a", "fn": "inc", "code": "def inc(x):\\n    return x + 1\\n"}\n'
    )
    out = tmp_path / "o.jsonl"
    res = CliRunner().invoke(
        cli,
        [
            "grade", "--hidden", str(tmp_path / "h.jsonl"), "--samples", str(tmp_path / "s.jsonl"),
            "--skip-bad-lines", "--no-static", "--no-judge", "--out", str(out),
        ],
    )  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "h.jsonl:2:" in res.stderr
    assert not out.exists()


def test_bare_gradebox_prints_help_and_exits_0():
    exe = Path(sys.executable).with_name("gradebox")
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: gradebox")
    assert "grade" in done.stdout and "Example:" in done.stdout
    assert CliRunner().invoke(cli, []).exit_code == 0


def test_the_docs_document_every_row_field_outcome_and_reason(example_rows):
    from typing import get_args

    from gradebox.verdict import Reason
    from sandbox.types import CaseOutcome

    page = (ROOT / "docs/concepts/verdicts.md").read_text()
    table = page[page.index("| field | what it holds |") :]
    rows, _ = example_rows
    fields = {k for r in rows.values() for k in r} | {
        "explain",
        "counterexample",
        "input_sha256",
        "caps_hit",
    }
    for name in fields:
        assert f"`{name}`" in table.split("Outcome labels")[0], name
    labels = table[table.index("| label | meaning |") :]
    for label in get_args(CaseOutcome):
        assert f"| `{label}` |" in labels, label
    for reason in get_args(Reason):
        assert f"`{reason}`" in table, reason


def test_the_docs_grade_examples_write_to_scratch_paths_and_name_real_files():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    text = "".join(p.read_text() for p in pages)
    blocks = re.split(r"```(?:sh|bash|console)\n", text)[1:]
    grade = [b.split("```")[0] for b in blocks if "gradebox grade" in b]
    assert grade
    for block in grade:
        for out in re.findall(r"--(?:out|sarif|junit|html) (\S+)", block):
            assert out.startswith("/tmp/"), out
        for path in re.findall(r"\$E/(\S+)", block):
            assert (EXAMPLES / path).is_file(), path


def test_a_fork_bomb_row_says_it_hit_the_process_cap(tmp_path):
    bomb = (
        "import os, time\n"
        "def inc(x):\n"
        "    budget = 11\n"
        "    while budget > 0:\n"
        "        try:\n"
        "            os.fork()\n"
        "        except OSError:\n"
        "            continue\n"
        "        budget -= 1\n"
        "    time.sleep(30)\n"
    )
    (tmp_path / "h.jsonl").write_text('{"fn": "inc", "args": [1], "expect": 2}\n')
    samples = [
        {"id": "bomb", "fn": "inc", "code": bomb},
        {"id": "ok", "fn": "inc", "code": "def inc(x):\n    return x + 1\n"},
    ]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))

    def grade() -> dict[str, dict[str, Any]]:
        res = CliRunner().invoke(
            cli,
            [
                "grade",
                "--hidden",
                str(tmp_path / "h.jsonl"),
                "--samples",
                str(tmp_path / "s.jsonl"),
                "--no-static",
                "--no-judge",
                "--case-timeout",
                "3",  # room for a bomb starved by a busy machine to reach the cap
                "--jobs",
                "1",
                "--banned-imports",
                "",
            ],
        )
        assert res.exit_code == 0, res.output
        return {r["id"]: r for r in map(json.loads, res.stdout.splitlines())}

    # A bomb starved before it reached the cap is a plain timeout: it proves nothing.
    rows = retry_starved(grade, lambda rows: rows["bomb"]["outcomes"] == ["timeout"])
    assert rows["bomb"]["outcomes"] == ["resource"]  # stopped at a cap: named below
    assert rows["bomb"]["failed"] == [0] and rows["bomb"]["timeouts"] == []
    assert rows["bomb"]["caps_hit"] == ["processes"], rows["bomb"]
    assert "caps_hit" not in rows["ok"] and rows["ok"]["verdict"] == "pass"
