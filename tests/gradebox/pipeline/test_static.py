"""The static stage inside `gradebox grade`: real ruff, mypy and bandit, the real sandbox.

One run over a small corpus (module fixture) is shared by most assertions; the
options that change a run (policy, lockfile, --no-static) get runs of their own.
The scheduler that batches stages over chunks is tested on its own at the end.
"""

from __future__ import annotations

import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft4Validator

import static.batch
from gradebox.cli import cli
from gradebox.grade import GateReport, StaticReport, TestsReport
from gradebox.model import Sample, Task
from gradebox.pipeline.core import MAX_MERGE, Annotation, Graded, stream
from gradebox.pipeline.static import StaticStage
from gradebox.pipeline.tests import GradeConfig, Grader, grade_all
from gradebox.verdict import Verdict
from judge import JudgeResult
from sandbox.runner import open_sandbox
from sandbox.types import HiddenCase, Limits
from static.batch import StaticConfig
from static.findings import ToolError

ROOT = Path(__file__).resolve().parents[3]
SARIF_SCHEMA = json.loads((ROOT / "tests/static/schemas/sarif-schema-2.1.0.json").read_text())
NO_JUDGE_ENV = {
    k: None
    for k in (
        "GRADEBOX_JUDGE_BASE_URL",
        "GRADEBOX_JUDGE_API_KEY",
        "GRADEBOX_JUDGE_MODEL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    )
}

HIDDEN = [{"fn": "inc", "args": [1], "expect": 2}, {"fn": "inc", "args": [41], "expect": 42}]
PUBLIC = [{"fn": "inc", "spec": "Return x + 1.", "signature": "def inc(x: int) -> int"}]
ORIGINAL = "".join(f"A{i} = {i}\n" for i in range(12)) + "def inc(x):\n    return x + 2\n"
CORPUS = {
    # passes every hidden case; nothing to report
    "clean": {"code": "def inc(x: int) -> int:\n    return x + 1\n"},
    # passes (the branch never runs); bandit B307 is MEDIUM: annotates under the default policy
    "eval": {
        "code": "def inc(x):\n    if x is None:\n        return eval(input())\n    return x + 1\n"
    },
    # passes; bandit B324 (weak hash) is HIGH: the default policy fails it
    "md5": {"code": "import hashlib\n\n\ndef inc(x):\n    hashlib.md5(b'x')\n    return x + 1\n"},
    # passes (the import never runs); an invented package is GBX101: the policy fails it
    "invented-lazy": {
        "code": "def inc(x):\n    if x is None:\n        import fastjsonx\n\n"
        "        return fastjsonx.loads('1')\n    return x + 1\n"
    },
    # the sandbox cannot import it: hidden tests decide first, static still reports GBX101
    "invented-top": {"code": "import fastjsonx\n\n\ndef inc(x):\n    return x + 1\n"},
    # a real distribution that is not installed here and not pinned: GBX102 (medium)
    "lightgbm-lazy": {
        "code": "def inc(x):\n    if x is None:\n        import lightgbm\n\n"
        "        return int(lightgbm.__version__[0])\n    return x + 1\n"
    },
    # two candidate blocks: a contract failure, so no static checks at all
    "two-blocks": {
        "reply": "```python\ndef inc(x):\n    return x + 1\n```\nor\n"
        "```python\ndef inc(x):\n    return 1 + x\n```\n"
    },
    # a patch that rewrites a whole file (CRLF) to change one line
    "rewrite": {"code": ORIGINAL.replace("x + 2", "x + 1").replace("\n", "\r\n")},
}


def _write_inputs(d: Path, corpus: dict[str, dict[str, str]] = CORPUS) -> list[str]:
    (d / "hidden.jsonl").write_text("".join(json.dumps(h) + "\n" for h in HIDDEN))
    (d / "public.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PUBLIC))
    lines = []
    for sid, fields in corpus.items():
        extra = {"original": ORIGINAL} if sid == "rewrite" else {}
        lines.append(json.dumps({"id": sid, "fn": "inc", **fields, **extra}) + "\n")
    (d / "samples.jsonl").write_text("".join(lines))
    return [
        "grade",
        "--hidden",
        str(d / "hidden.jsonl"),
        "--public",
        str(d / "public.jsonl"),
        "--samples",
        str(d / "samples.jsonl"),
        "--jobs",
        "2",
        "--no-judge",
        "--banned-imports",
        "",
    ]


def _invoke(args: list[str]):
    return CliRunner().invoke(cli, args, env=NO_JUDGE_ENV)


def _rows(text: str) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, text.splitlines())}


def _rules(row: dict) -> list[str]:
    return [f["rule"] for f in row["static"]["findings"]]


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("static")
    args = _write_inputs(d)
    sarif = d / "out.sarif"
    res = _invoke([*args, "--sarif", str(sarif)])
    assert res.exit_code == 0, res.output
    return _rows(res.stdout), res.stderr, json.loads(sarif.read_text())


def test_verdicts_under_the_default_policy(default_run):
    rows, _, _ = default_run
    assert {k: (r["verdict"], r["reason"]) for k, r in rows.items()} == {
        "clean": ("pass", "ok"),
        "eval": ("pass", "ok"),
        "md5": ("fail", "policy:static"),
        "invented-lazy": ("fail", "policy:static"),
        "invented-top": ("fail", "hidden_tests"),
        "lightgbm-lazy": ("pass", "ok"),
        "two-blocks": ("fail", "contract"),
        "rewrite": ("pass", "ok"),
    }


def test_static_field_shape(default_run):
    rows, _, _ = default_run
    s = rows["md5"]["static"]
    assert set(s) == {
        "findings",
        "metrics",
        "diff",
        "counts",
        "effect",
        "deciding",
        "infra_error",
    }
    (b324,) = [f for f in s["findings"] if f["rule"] == "B324"]
    assert b324 == {
        "layer": "security",
        "rule": "B324",
        "severity": "high",
        "line": 5,
        "col": 5,
        "message": b324["message"],
    }
    assert (s["effect"], s["deciding"], s["infra_error"]) == ("fail", ["B324"], None)
    assert s["counts"]["by_layer"]["security"] == 1
    assert s["counts"]["by_severity"]["high"] == 1
    assert s["metrics"]["functions"] == [
        {"name": "inc", "line": 4, "complexity": 1, "max_nesting": 0}
    ]
    assert s["diff"] is None


def test_findings_from_every_layer_reach_the_rows(default_run):
    rows, _, _ = default_run
    assert rows["clean"]["static"]["findings"] == []
    assert rows["clean"]["static"]["effect"] == "pass"
    assert "B307" in _rules(rows["eval"])  # annotates: eval is MEDIUM in bandit
    assert rows["eval"]["static"]["effect"] == "pass"
    assert "GBX101" in _rules(rows["invented-lazy"])
    assert rows["invented-lazy"]["static"]["deciding"] == ["GBX101"]
    # a failed hidden test stays the reason, and the static verdict is still on the row
    assert rows["invented-top"]["static"]["effect"] == "fail"
    assert {"GBX101", "F401"} <= set(_rules(rows["invented-top"]))
    assert "GBX102" in _rules(rows["lightgbm-lazy"])
    assert rows["two-blocks"]["static"] is None
    assert all(r["judge"] is None for r in rows.values())


def test_diff_size_only_for_samples_with_an_original(default_run):
    rows, _, _ = default_run
    diff = rows["rewrite"]["static"]["diff"]
    assert diff["original_lines"] == 14 and diff["rewritten_ratio"] == 1.0
    assert diff["normalized_changed_lines"] == 1
    assert "GBX201" in _rules(rows["rewrite"])
    assert all(
        r["static"]["diff"] is None for k, r in rows.items() if r["static"] and k != "rewrite"
    )


def test_summary_has_static_counts(default_run):
    _, summary, _ = default_run
    assert "static: findings high " in summary
    assert "samples failed by policy 3, for review 0; tool errors 0" in summary


def test_sarif_is_schema_valid_and_located_per_sample(default_run):
    rows, _, log = default_run
    Draft4Validator(SARIF_SCHEMA).validate(log)
    results = log["runs"][0]["results"]
    where = {
        (r["properties"]["sample"], r["ruleId"]): r["locations"][0]["physicalLocation"]
        for r in results
    }
    loc = where[("invented-lazy", "GBX101")]
    assert loc["artifactLocation"]["uri"] == "candidates/invented-lazy.py"
    assert loc["region"]["startLine"] == 3
    assert ("md5", "B324") in where and ("invented-top", "GBX101") in where
    # exactly the rows' findings, in run order
    expected = [
        (k, f["rule"]) for k, r in rows.items() if r["static"] for f in r["static"]["findings"]
    ]
    assert [(r["properties"]["sample"], r["ruleId"]) for r in results] == expected
    ids = [r["ruleId"] for r in results]
    assert sorted(set(ids)) == [rule["id"] for rule in log["runs"][0]["tool"]["driver"]["rules"]]


def test_policy_file_fails_and_reviews(tmp_path):
    args = _write_inputs(tmp_path)
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[policy]\nfail_on = [{layer = "security", rules = ["B307"]}]\n'
        'review_on = [{layer = "imports", rules = ["GBX102"]}]\n'
    )
    res = _invoke([*args, "--static-policy", str(policy)])
    assert res.exit_code == 0, res.output
    rows = _rows(res.stdout)
    assert (rows["eval"]["verdict"], rows["eval"]["reason"]) == ("fail", "policy:static")
    assert rows["eval"]["static"]["deciding"] == ["B307"]
    # the file replaces the default fail_on: a weak hash and an invented import now annotate
    assert rows["md5"]["verdict"] == "pass"
    assert (rows["lightgbm-lazy"]["verdict"], rows["lightgbm-lazy"]["reason"]) == (
        "needs_review",
        "policy:static",
    )
    assert rows["lightgbm-lazy"]["static"]["effect"] == "review"
    assert rows["invented-top"]["reason"] == "hidden_tests"


def test_json_policy_and_bad_policy_file(tmp_path):
    args = _write_inputs(tmp_path, {"eval": CORPUS["eval"]})
    good = tmp_path / "policy.json"
    good.write_text(json.dumps({"fail_on": [{"rules": ["B3*"]}]}))
    res = _invoke([*args, "--static-policy", str(good)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["reason"] == "policy:static"
    bad = tmp_path / "bad.toml"
    bad.write_text('fail_on = [{layer = "nope"}]\n')
    res = _invoke([*args, "--static-policy", str(bad), "--out", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 2
    assert f"{bad}: fail_on[0]: unknown layer 'nope'" in res.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_lockfile_pins_what_may_be_imported(tmp_path):
    args = _write_inputs(tmp_path, {"lightgbm-lazy": CORPUS["lightgbm-lazy"]})
    lock = tmp_path / "requirements.txt"
    lock.write_text("lightgbm==4.5.0 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    res = _invoke([*args, "--lockfile", str(lock)])
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout)
    assert "GBX102" not in _rules(row) and row["verdict"] == "pass"


def test_bad_lockfile_exits_2_with_file_and_line(tmp_path):
    args = _write_inputs(tmp_path, {"clean": CORPUS["clean"]})
    lock = tmp_path / "requirements.txt"
    lock.write_text("requests==2.32.3\nthis is ( not a requirement\n")
    res = _invoke([*args, "--lockfile", str(lock), "--out", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 2
    assert f"{lock}:2:" in res.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_no_static_gives_null(tmp_path):
    args = _write_inputs(tmp_path)
    res = _invoke([*args, "--no-static"])
    assert res.exit_code == 0, res.output
    rows = _rows(res.stdout)
    assert all(r["static"] is None for r in rows.values())
    assert rows["md5"]["verdict"] == "pass"  # nothing static decides any more
    assert "static:" not in res.stderr


def test_sarif_needs_the_static_stage(tmp_path):
    args = _write_inputs(tmp_path, {"clean": CORPUS["clean"]})
    res = _invoke([*args, "--no-static", "--sarif", str(tmp_path / "x.sarif")])
    assert res.exit_code == 2 and "--sarif needs the static layers" in res.stderr


def test_missing_tool_is_a_clear_error_before_grading(tmp_path, monkeypatch):
    def missing(config):
        raise ToolError("bandit not found: install it (`pip install bandit`) next to gradebox")

    monkeypatch.setitem(static.batch.TOOLS, "security", missing)
    args = _write_inputs(tmp_path, {"clean": CORPUS["clean"]})
    res = _invoke([*args, "--out", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 2
    assert "cannot start: static layers: security: bandit not found" in res.stderr
    assert "--no-static" in res.stderr
    assert not (tmp_path / "o.jsonl").exists()
    # the same run without the static stage does not need the tool
    assert _invoke([*args, "--no-static"]).exit_code == 0


# -- a static tool that fails: infra_error, never a finding ----------------------------------


def test_tool_failure_is_an_infra_error_and_a_pass_needs_review(tmp_path):
    broken = tmp_path / "mypy"
    broken.write_text("#!/bin/sh\necho 'Segmentation fault' >&2\nexit 139\n")
    broken.chmod(0o755)
    task = Task("inc", (HiddenCase(fn="inc", args=(1,), kwargs={}, expect=2, args_wire=[1]),))
    samples = [
        Sample("good", "inc", code="def inc(x):\n    return x + 1\n"),
        Sample("bad", "inc", code="def inc(x):\n    return x\n"),
        Sample(
            "risky",
            "inc",
            code="import hashlib\n\ndef inc(x):\n    hashlib.md5()\n    return x + 1\n",
        ),
    ]
    stage = StaticStage(StaticConfig(mypy=str(broken), cache_dir=tmp_path / "cache"))
    with open_sandbox("auto", Limits(), workers=1) as sandbox, ThreadPoolExecutor(1) as pool:
        grader = Grader(sandbox, {"inc": task}, GradeConfig())
        rows = {r["id"]: r for r in grade_all(grader, samples, pool, stages=[stage])}
    for row in rows.values():
        assert set(row["static"]["infra_error"]) == {"types"}
        assert "exit code 139" in row["static"]["infra_error"]["types"]
        assert row["infra_error"] is None  # the sandbox was fine
    assert (rows["good"]["verdict"], rows["good"]["reason"]) == ("needs_review", "infra_error")
    assert (rows["bad"]["verdict"], rows["bad"]["reason"]) == ("fail", "hidden_tests")
    # the layers that did run still count: bandit's HIGH finding fails it
    assert (rows["risky"]["verdict"], rows["risky"]["reason"]) == ("fail", "policy:static")


def _tests(outcomes=("ok",)) -> TestsReport:
    return TestsReport(tuple(outcomes), GateReport("ok", (), "ok"), "none", 1.0)


def test_a_crashed_batch_keeps_the_field_shape_and_skips_samples_without_code():
    stage = StaticStage(StaticConfig(), environment={})
    items = [
        Graded("a", "inc", "def inc(x):\n    return x + 1\n", None, None, _tests()),
        Graded("b", "inc", None, None, None, _tests()),
    ]
    a, b = stage.crashed(items, "static stage error: OSError: disk full")
    assert b.value is None
    assert isinstance(a.value, StaticReport) and a.value.effect == "pass"
    assert a.value.infra_error == {"static": "static stage error: OSError: disk full"}
    assert (a.value.findings, a.value.deciding) == ((), ())
    row = a.value.to_json()
    assert (row["findings"], row["effect"], row["deciding"]) == ([], "pass", [])


# -- the scheduler: chunks, merged batches, input order ------------------------------------


class _Recorder:
    def __init__(self, field, *, fail_on_call=None, delay=0.0):
        self.field = field
        self.calls: list[list[str]] = []
        self.fail_on_call = fail_on_call
        self.delay = delay
        self.threads: set[str] = set()

    def run(self, items):
        self.calls.append([g.sample_id for g in items])
        self.threads.add(threading.current_thread().name)
        time.sleep(self.delay)
        if self.fail_on_call == len(self.calls):
            raise RuntimeError("boom")
        if self.field == "static":
            return [
                Annotation(StaticReport((), {"seen": g.sample_id}, None, "pass", (), None))
                for g in items
            ]
        return [
            Annotation(
                JudgeResult(
                    status="scored",
                    verdict="mismatch" if g.sample_id == "s3" else "match",
                    rationale=g.sample_id,
                )
            )
            for g in items
        ]

    def crashed(self, items, message):
        crash = StaticReport((), {"crashed": message}, None, "pass", (), {"static": message})
        return [Annotation(crash) for _ in items]


def _graded(i: int) -> Graded:
    time.sleep(random.random() / 500)
    return Graded(f"s{i}", "f", "code", None, None, _tests(("ok",) if i != 5 else ("wrong",)))


@pytest.mark.parametrize("count", [0, 1, 7, 40])
def test_stream_keeps_input_order_and_hands_whole_chunks_to_each_stage(count):
    slow = _Recorder("static", delay=0.02)
    fast = _Recorder("judge")
    seen: list[int] = []
    with ThreadPoolExecutor(4) as pool:
        rows = list(
            stream(
                lambda i: pool.submit(_graded, i),
                count,
                lambda i, exc: pytest.fail(f"{exc}"),
                stages=[slow, fast],
                on_row=lambda i, row: seen.append(i),
                chunk=3,
            )
        )
    assert [g.id for g in rows] == [f"s{i}" for i in range(count)]
    assert sorted(seen) == list(range(count))
    for stage in (slow, fast):
        assert sorted(s for call in stage.calls for s in call) == sorted(g.id for g in rows)
        for call in stage.calls:
            assert len(call) <= 3 * MAX_MERGE
        assert len(stage.threads) <= 1  # one thread per stage
    if count == 40:
        assert len(slow.calls) < 14  # 14 chunks: a busy stage takes the waiting ones at once
    for i, grade in enumerate(rows):
        assert grade.static is not None and grade.static.metrics == {"seen": f"s{i}"}
        assert grade.judge is not None and grade.judge.rationale == f"s{i}"
        expect = ("fail", "hidden_tests") if i == 5 else ("needs_review", "judge:mismatch")
        if i not in (3, 5):
            expect = ("pass", "ok")
        assert (grade.verdict.verdict, grade.verdict.reason) == expect


def test_stream_a_crashing_stage_marks_its_batch_and_the_run_goes_on():
    stage = _Recorder("static", fail_on_call=1)
    with ThreadPoolExecutor(2) as pool:
        rows = list(
            stream(lambda i: pool.submit(_graded, i), 6, lambda i, e: None, stages=[stage], chunk=2)
        )
    crashed = [g for g in rows if "crashed" in g.static.metrics]
    assert len(crashed) >= 2
    assert "static stage error: RuntimeError: boom" in crashed[0].static.metrics["crashed"]
    assert all(g.verdict.reason == "infra_error" for g in crashed)


def test_stream_without_stages_maps_grader_errors_to_infra_rows():
    def submit(i):
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(lambda: 1 / 0 if i == 1 else _graded(i))

    def fallback(i, exc):
        tests = TestsReport((), None, "none", 0.0, infra_error=repr(exc))
        return Graded(f"s{i}", "f", None, None, None, tests, Verdict("needs_review", "infra_error"))

    rows = list(stream(submit, 3, fallback))
    assert [g.id for g in rows] == ["s0", "s1", "s2"]
    assert "ZeroDivisionError" in rows[1].tests.infra_error
    assert rows[1].to_row()["reason"] == "infra_error"
    assert rows[0].verdict.verdict == "pass"


# -- attacks: one sample must not cost its chunk -------------------------------------------

ELIF_INC = (
    "def inc(x):\n    if x == -1:\n        return 0\n"
    + "".join(f"    elif x == -{i}:\n        return {1 - i}\n" for i in range(2, 1001))
    + "    return x + 1\n"
)
SUM_INC = "def inc(x):\n    return x + 1" + " + 0" * 1000 + "\n"
CLEAN_INC = CORPUS["clean"]["code"]
MD5_INC = CORPUS["md5"]["code"]


def test_poisonous_samples_cost_only_themselves_in_a_chunk(tmp_path):
    # Both pass every hidden case; each makes bandit (and, before, our metrics) raise.
    task = Task(
        "inc",
        (
            HiddenCase(fn="inc", args=(1,), kwargs={}, expect=2, args_wire=[1]),
            HiddenCase(fn="inc", args=(41,), kwargs={}, expect=42, args_wire=[41]),
        ),
    )
    codes = {"elif": ELIF_INC, "sum": SUM_INC}
    codes |= {f"clean{i}": CLEAN_INC.replace("1\n", f"1  # {i}\n") for i in range(4)}
    codes |= {f"md5-{i}": MD5_INC.replace("b'x'", f"b'{i}'") for i in range(4)}
    order = ["clean0", "elif", "md5-0", "clean1", "md5-1", "clean2", "sum", "md5-2", "clean3"]
    order += ["md5-3"]
    samples = [Sample(name, "inc", code=codes[name]) for name in order]
    stage = StaticStage(StaticConfig(cache_dir=tmp_path / "cache"))
    with open_sandbox("auto", Limits(), workers=2) as sandbox, ThreadPoolExecutor(2) as pool:
        grader = Grader(sandbox, {"inc": task}, GradeConfig())
        rows = {r["id"]: r for r in grade_all(grader, samples, pool, stages=[stage])}
    for name in ("elif", "sum"):
        assert (rows[name]["verdict"], rows[name]["reason"]) == ("needs_review", "infra_error")
        if rows[name]["static"] is None:
            # The grader's own ast.parse (gate, extract) can hit CPython 3.11.7's
            # "AST constructor recursion depth mismatch" (python/cpython#106905) on
            # this sample: an infra error of the grader, outside the static stage.
            assert "SystemError" in rows[name]["infra_error"], json.dumps(rows[name])[:500]
            continue
        assert rows[name]["outcomes"] == ["ok", "ok"], name
        assert set(rows[name]["static"]["infra_error"]) == {"security"}, name
        if name == "elif":
            assert rows[name]["static"]["metrics"]["max_complexity"] == 1001
    for i in range(4):
        clean, md5 = rows[f"clean{i}"], rows[f"md5-{i}"]
        assert clean["static"]["infra_error"] is None and clean["verdict"] == "pass"
        assert md5["static"]["infra_error"] is None
        assert (md5["verdict"], md5["reason"]) == ("fail", "policy:static")
        assert "B324" in md5["static"]["deciding"]


def test_a_check_that_raises_on_one_sample_is_that_samples_infra_error(monkeypatch):
    import static.metrics

    real = static.metrics.check

    def fragile(code, **options):
        if "POISON" in code:
            raise RecursionError("maximum recursion depth exceeded")
        return real(code, **options)

    monkeypatch.setattr(static.metrics, "check", fragile)
    stage = StaticStage(StaticConfig(layers=frozenset({"lint"})), environment={})
    items = [
        Graded("a", "inc", "def inc(x):\n    return x + 1\n", None, None, _tests()),
        Graded("p", "inc", "# POISON\ndef inc(x):\n    return x + 1\n", None, None, _tests()),
        Graded("u", "inc", "import os\n\n\ndef inc(x):\n    return x + 1\n", None, None, _tests()),
    ]
    a, p, u = (n.value for n in stage.run(items))
    assert p.infra_error == {"metrics": "the metrics check raised RecursionError"}
    assert not a.infra_error and a.metrics["max_complexity"] == 1
    assert not u.infra_error and [f.rule for f in u.findings] == ["F401"]


# -- a task's own static settings in public.jsonl ------------------------------------------


def _md5_run(tmp_path, static):
    (tmp_path / "h.jsonl").write_text('{"fn": "inc", "args": [1], "expect": 2}\n')
    public = {"fn": "inc", "spec": "Add one; log an MD5 digest of b'x'."}
    if static is not None:
        public["static"] = static
    (tmp_path / "p.jsonl").write_text(json.dumps(public) + "\n")
    (tmp_path / "s.jsonl").write_text(
        json.dumps({"id": "md5", **CORPUS["md5"], "fn": "inc"}) + "\n"
    )
    args = ["grade", "--hidden", str(tmp_path / "h.jsonl"), "--public", str(tmp_path / "p.jsonl")]
    args += ["--samples", str(tmp_path / "s.jsonl"), "--banned-imports", ""]
    return _invoke(args)


def test_a_task_that_allows_a_rule_passes_and_keeps_the_finding(tmp_path):
    res = _md5_run(tmp_path, None)
    assert _rows(res.stdout)["md5"]["reason"] == "policy:static"
    res = _md5_run(tmp_path, {"allow_rules": ["B324"]})
    assert res.exit_code == 0, res.output
    row = _rows(res.stdout)["md5"]
    assert (row["verdict"], row["reason"]) == ("pass", "ok")
    assert "B324" in _rules(row) and row["static"]["deciding"] == []


def test_a_task_policy_replaces_the_runs(tmp_path):
    res = _md5_run(tmp_path, {"policy": {"fail_on": [], "review_on": [{"min_severity": "high"}]}})
    assert res.exit_code == 0, res.output
    row = _rows(res.stdout)["md5"]
    assert (row["verdict"], row["reason"]) == ("needs_review", "policy:static")


@pytest.mark.parametrize(
    ("static", "message"),
    [
        ({"allow_rules": "B324"}, "static"),
        ({"allow_rules": ["B 324"]}, "static"),
        ({"policy": {"fail_on": "everything"}}, "static.policy"),
        ({"lockfile": {"name": "requirements.txt", "content": ""}}, "static"),
    ],
)
def test_bad_task_static_settings_are_reported_with_file_and_line(tmp_path, static, message):
    res = _md5_run(tmp_path, static)
    assert res.exit_code == 2, res.output
    assert f"p.jsonl:1: {message}" in res.output
