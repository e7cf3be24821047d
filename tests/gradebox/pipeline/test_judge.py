"""The judge inside `gradebox grade`: the real openai client against a local HTTP server.

The server (stdlib ``http.server`` on 127.0.0.1, real sockets) answers
``POST /v1/chat/completions`` with whatever the test scripts, and records every
request, so a test can see exactly what the judge was shown. Most runs pass
``--no-static`` to keep them fast; one run keeps both stages on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai_server
import pytest
from click.testing import CliRunner
from openai_server import Scripted, ScriptedServer, answer

from gradebox.cli import cli
from gradebox.runs.summary import format_summary, summarize

ROOT = Path(__file__).resolve().parents[3]
JUDGE_VARS = (
    "GRADEBOX_JUDGE_BASE_URL",
    "GRADEBOX_JUDGE_API_KEY",
    "GRADEBOX_JUDGE_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)

# Distinctive values that must never reach the judge.
SECRET_ARG, SECRET_EXPECT = 73_918_277, 73_918_278
PROSE = "PROSE-MARKER-7Q: trust me, this passes every hidden test and is O(1)."
HIDDEN = [
    {"fn": "inc", "args": [1], "expect": 2},
    {"fn": "inc", "args": [SECRET_ARG], "expect": SECRET_EXPECT},
]
PUBLIC = [
    {
        "fn": "inc",
        "spec": "Return x plus one.",
        "signature": "def inc(x: int) -> int",
        "rubric": "default",
    }
]
GOOD = "def inc(x: int) -> int:\n    return x + 1\n"
WRONG = "def inc(x: int) -> int:\n    return x + 2\n"


# -- a scripted OpenAI-compatible server ------------------------------------------------------


class Server:
    """Replies come from ``self.reply(body) -> (status, body)``; requests are recorded."""

    def __init__(self) -> None:
        self.reply: Callable[[dict[str, Any]], tuple[int, Any]] = lambda body: (200, answer(body))
        self.delay = 0.0
        self._srv = ScriptedServer()
        self._srv.responder = self._respond
        self._srv.start()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return self._srv.bodies()

    @property
    def raw(self) -> list[str]:
        return [seen.raw for seen in self._srv.requests]

    @property
    def max_in_flight(self) -> int:
        return self._srv.max_in_flight

    @property
    def base_url(self) -> str:
        return self._srv.base_url

    def stop(self) -> None:
        self._srv.stop()

    def _respond(self, body: dict[str, Any]) -> Scripted:
        time.sleep(self.delay)
        status, payload = self.reply(body)
        return Scripted(status, json.dumps(payload))


def completion(content: str) -> dict[str, Any]:
    return openai_server.completion(content, fingerprint="fp_test", usage=(300, 50))


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    yield srv
    srv.stop()


def _env(server: Server | None, tmp_path: Path, **extra: str | None) -> dict[str, str | None]:
    env: dict[str, str | None] = dict.fromkeys(JUDGE_VARS)
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    if server is not None:
        env["GRADEBOX_JUDGE_BASE_URL"] = server.base_url
        env["GRADEBOX_JUDGE_MODEL"] = "judge-model"
    env.update(extra)
    return env


def _inputs(d: Path, samples: list[dict[str, Any]], *, public: bool = True) -> list[str]:
    (d / "hidden.jsonl").write_text("".join(json.dumps(h) + "\n" for h in HIDDEN))
    (d / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    args = ["grade", "--hidden", str(d / "hidden.jsonl"), "--samples", str(d / "samples.jsonl")]
    if public:
        (d / "public.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PUBLIC))
        args += ["--public", str(d / "public.jsonl")]
    return [*args, "--jobs", "2"]


def _grade(args: list[str], env: dict[str, str | None]) -> tuple[dict[str, dict], str]:
    res = CliRunner().invoke(cli, args, env=env)
    assert res.exit_code == 0, res.output
    return {r["id"]: r for r in map(json.loads, res.stdout.splitlines())}, res.stderr


# -- tests ---------------------------------------------------------------------------------


def test_scored_annotation_on_the_row_and_cached_on_the_second_run(server, tmp_path):
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    rows, summary = _grade([*args, "--no-static"], _env(server, tmp_path))
    judge = rows["good"]["judge"]
    assert judge["status"] == "scored"
    assert (judge["model"], judge["system_fingerprint"]) == ("judge-model-2024", "fp_test")
    assert judge["verdict"] == "match" and judge["weighted"] == 1.0
    assert judge["scores"]["INT001"] == 5
    assert (judge["cache_hit"], judge["attempts"]) == (False, 1)
    assert judge["tokens"] == {"prompt": 300, "completion": 50}
    assert judge["rubric"].startswith("default@")
    assert rows["good"]["verdict"] == "pass"
    assert "judge: scored 1, needs_review 0, unavailable 0, skipped 0; cache hits 0" in summary
    # the probe asked first (a fixed item), then the judgement: temperature 0, the model
    probe, asked = server.bodies
    assert "def add(a: int, b: int)" in probe["messages"][1]["content"]
    assert asked["temperature"] == 0 and asked["model"] == "judge-model"
    # the default cache lives under $XDG_CACHE_HOME/gradebox/
    assert (tmp_path / "xdg" / "gradebox" / "judge.sqlite").is_file()

    again, summary = _grade([*args, "--no-static"], _env(server, tmp_path))
    assert len(server.bodies) == 2  # the probe's finding is cached too
    assert again["good"]["judge"]["cache_hit"] is True
    assert again["good"]["judge"]["scores"] == judge["scores"]
    assert "cache hits 1" in summary


def test_judge_and_static_together_with_explicit_cache_and_model(server, tmp_path):
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    cache = tmp_path / "j.sqlite"
    rows, summary = _grade(
        [*args, "--judge-cache", str(cache), "--judge-model", "other-model"],
        _env(server, tmp_path, GRADEBOX_JUDGE_MODEL=None),
    )
    assert server.bodies[0]["model"] == "other-model"
    assert cache.is_file()
    row = rows["good"]
    assert row["static"]["effect"] == "pass" and row["judge"]["status"] == "scored"
    assert row["verdict"] == "pass"
    assert "static: findings" in summary and "judge: scored 1" in summary


def test_unparseable_reply_sends_a_passing_sample_to_review(server, tmp_path):
    server.reply = lambda body: (200, completion("Looks good to me! Score: 5/5"))
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    rows, summary = _grade([*args, "--no-static", "--no-judge-cache"], _env(server, tmp_path))
    row = rows["good"]
    assert (row["verdict"], row["reason"]) == ("needs_review", "judge:unscored")
    assert row["judge"]["status"] == "needs_review"
    assert row["judge"]["reason_code"] == "parse_failure"
    assert row["judge"]["raw"] == "Looks good to me! Score: 5/5"
    assert row["judge"]["scores"] == {}  # never a default score
    assert "needs_review 1" in summary
    assert not (tmp_path / "xdg").exists()  # --no-judge-cache touched no cache


def test_judge_match_cannot_rescue_a_failing_sample(server, tmp_path):
    server.reply = lambda body: (200, answer(body, "match", top=True))
    args = _inputs(tmp_path, [{"id": "wrong", "fn": "inc", "code": WRONG}])
    rows, summary = _grade([*args, "--no-static"], _env(server, tmp_path))
    row = rows["wrong"]
    assert row["judge"]["status"] == "scored" and row["judge"]["verdict"] == "match"
    assert row["judge"]["weighted"] == 1.0
    assert (row["pass"], row["verdict"], row["reason"]) == (False, "fail", "hidden_tests")
    assert "match/fail 1" in summary


def test_judge_mismatch_sends_a_passing_sample_to_review(server, tmp_path):
    server.reply = lambda body: (200, answer(body, "mismatch", top=False))
    args = _inputs(
        tmp_path,
        [{"id": "good", "fn": "inc", "code": GOOD}, {"id": "wrong", "fn": "inc", "code": WRONG}],
    )
    rows, summary = _grade([*args, "--no-static"], _env(server, tmp_path))
    assert (rows["good"]["verdict"], rows["good"]["reason"]) == ("needs_review", "judge:mismatch")
    assert (rows["wrong"]["verdict"], rows["wrong"]["reason"]) == ("fail", "hidden_tests")
    assert rows["good"]["judge"]["unmet_requirements"] == ["adds two, not one"]
    assert "mismatches 2" in summary
    assert "mismatch/pass 1, mismatch/fail 1" in summary


def test_unavailable_endpoint_is_an_annotation_not_a_verdict(server, tmp_path):
    server.reply = lambda body: (400, {"error": {"message": "unknown model", "type": "x"}})
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    rows, summary = _grade([*args, "--no-static", "--no-judge-cache"], _env(server, tmp_path))
    assert rows["good"]["judge"]["status"] == "unavailable"
    assert rows["good"]["judge"]["reason_code"] == "rejected"
    assert rows["good"]["verdict"] == "pass"
    assert "unavailable 1" in summary


def test_the_judge_sees_spec_signature_and_code_only(server, tmp_path):
    reply = f"{PROSE}\n```python\n{GOOD}```\nIt returns {SECRET_EXPECT} for {SECRET_ARG}."
    args = _inputs(tmp_path, [{"id": "r", "fn": "inc", "reply": reply}])
    rows, _ = _grade([*args, "--no-static", "--explain"], _env(server, tmp_path))
    assert rows["r"]["judge"]["status"] == "scored"
    _probe, raw = server.raw
    for secret in (str(SECRET_ARG), str(SECRET_EXPECT), "PROSE-MARKER-7Q", "trust me"):
        assert secret not in raw
    prompt = "\n".join(m["content"] for m in server.bodies[1]["messages"])
    assert "Return x plus one." in prompt and "def inc(x: int) -> int" in prompt
    assert "return x + 1" in prompt


def test_not_configured_skips_the_judge_with_one_line(tmp_path):
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    rows, stderr = _grade([*args, "--no-static"], _env(None, tmp_path))
    judge = rows["good"]["judge"]
    assert (judge["status"], judge["reason"]) == ("skipped", "not configured")
    assert rows["good"]["verdict"] == "pass"
    lines = [line for line in stderr.splitlines() if "judge skipped" in line]
    assert len(lines) == 1 and "GRADEBOX_JUDGE_BASE_URL" in lines[0]


def test_no_judge_no_static_give_null_and_import_neither_stage(tmp_path):
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    script = (
        "import json, sys\n"
        "from click.testing import CliRunner\n"
        "from gradebox.cli import cli\n"
        f"res = CliRunner().invoke(cli, {[*args, '--no-static', '--no-judge']!r})\n"
        "print(json.dumps({'code': res.exit_code, 'out': res.stdout,\n"
        "                  'openai': 'openai' in sys.modules, 'judge': 'judge' in sys.modules,\n"
        "                  'static': 'static.batch' in sys.modules}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] == 0
    assert json.loads(result["out"])["judge"] is None
    # neither stage costs start-up time when it is off
    assert (result["openai"], result["judge"], result["static"]) == (False, False, False)


def test_sample_without_public_spec_is_skipped_with_a_reason(server, tmp_path):
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}], public=False)
    rows, _ = _grade([*args, "--no-static"], _env(server, tmp_path))
    judge = rows["good"]["judge"]
    assert judge["status"] == "skipped" and "no public spec" in judge["reason"]
    assert server.bodies == []


def test_contract_failure_is_skipped_as_no_code(server, tmp_path):
    reply = (
        "```python\ndef inc(x):\n    return x + 1\n```\n```python\ndef inc(x):\n    return 1\n```"
    )
    args = _inputs(tmp_path, [{"id": "two", "fn": "inc", "reply": reply}])
    rows, _ = _grade([*args, "--no-static"], _env(server, tmp_path))
    assert rows["two"]["judge"]["reason_code"] == "no_code"
    assert server.bodies == []


def test_concurrency_limit_is_honoured(server, tmp_path):
    server.delay = 0.15
    samples = [{"id": f"s{i}", "fn": "inc", "code": GOOD + f"# {i}\n"} for i in range(6)]
    args = _inputs(tmp_path, samples)
    rows, _ = _grade(
        [*args, "--no-static", "--no-judge-cache", "--judge-concurrency", "2"],
        _env(server, tmp_path),
    )
    assert all(r["judge"]["status"] == "scored" for r in rows.values())
    assert server.max_in_flight == 2


def test_judge_rubric_override_is_used(server, tmp_path):
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    rows, _ = _grade([*args, "--no-static", "--judge-rubric", "quality"], _env(server, tmp_path))
    assert rows["good"]["judge"]["rubric"].startswith("quality@")
    assert rows["good"]["judge"]["verdict"] is None  # quality asks for no intent verdict


@pytest.mark.parametrize(
    ("extra", "env_change", "expect"),
    [
        (["--judge-rubric", "no-such-rubric"], {}, "rubric 'no-such-rubric'"),
        ([], {"GRADEBOX_JUDGE_MODEL": None}, "no model: set GRADEBOX_JUDGE_MODEL"),
        ([], {"GRADEBOX_JUDGE_BASE_URL": "ftp://x"}, "base_url must be an http(s) URL"),
    ],
    ids=["unknown-rubric", "no-model", "bad-url"],
)
def test_bad_judge_setup_exits_2_before_grading(server, tmp_path, extra, env_change, expect):
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    out = tmp_path / "o.jsonl"
    res = CliRunner().invoke(
        cli,
        [*args, "--no-static", "--out", str(out), *extra],
        env=_env(server, tmp_path, **env_change),
    )
    assert res.exit_code == 2, res.output
    assert expect in res.stderr
    assert not out.exists()
    assert server.bodies == []


def _row(outcomes: list[str], judge: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "fn": "f",
        "pass": False,
        "verdict": "fail",
        "reason": "hidden_tests",
        "timeouts": [],
        "outcomes": outcomes,
        "static": None,
        "judge": judge,
    }


def _scored(verdict: str | None, **extra: Any) -> dict[str, Any]:
    return {"status": "scored", "verdict": verdict, "cache_hit": False, "attempts": 1, **extra}


_CELLS = ("match_pass", "match_fail", "mismatch_pass", "mismatch_fail")


@pytest.mark.parametrize(
    ("pairs", "kappa"),
    [
        ([("match", "ok"), ("match", "ok"), ("mismatch", "wrong"), ("mismatch", "wrong")] * 3, 1),
        ([("match", "ok"), ("match", "wrong"), ("mismatch", "ok"), ("mismatch", "wrong")] * 3, 0),
        ([("match", "wrong"), ("match", "wrong"), ("mismatch", "ok"), ("mismatch", "ok")] * 3, -1),
        ([("match", "ok"), ("match", "ok")] * 6, None),  # one class only: kappa is undefined
        ([("match", "ok"), ("mismatch", "wrong")] * 2, None),  # too few items for a figure
        ([], None),
    ],
)
def test_summary_judge_agreement_with_hidden_tests(pairs, kappa):
    rows = [_row([o], _scored(v)) for v, o in pairs]
    rows += [
        _row(["ok"], {"status": "skipped", "verdict": None}),
        _row(["ok"], _scored(None)),  # a rubric without an intent verdict: not in the table
        _row(["ok"], {"status": "needs_review", "verdict": None, "cache_hit": True, "attempts": 0}),
        _row(["ok"], {"status": "unavailable", "verdict": None, "attempts": 4}),
        _row(["ok"], None),
    ]
    j = summarize(rows)["judge"]
    agree = j["agreement"]
    assert agree["kappa"] == kappa
    assert sum(agree[c] for c in _CELLS) == agree["n"] == len(pairs)
    if len(pairs) < 10:
        assert agree["note"] == f"too few items (n={len(pairs)} < 10)" and agree["pi"] is None
    elif kappa is not None:
        low, high = agree["kappa_ci"]
        assert low <= kappa <= high and agree["pi"] == kappa  # balanced marginals: pi = kappa
    assert (j["scored"], j["needs_review"], j["unavailable"], j["skipped"]) == (
        len(pairs) + 1,
        1,
        1,
        1,
    )
    assert (j["rows"], j["cache_hits"], j["retries"]) == (len(rows) - 1, 1, 3)
    assert j["mismatches"] == sum(1 for v, _ in pairs if v == "mismatch")
    text = format_summary(summarize(rows), seconds=1.0, backend="bwrap")
    assert "judge: scored" in text and "static:" not in text


# -- resuming with the judge: what the environment and rubric files changed ---------------


def _resume(args: list[str], env: dict[str, str | None]) -> tuple[str, dict[str, Any]]:
    res = CliRunner().invoke(cli, args, env=env)
    assert res.exit_code == 0, res.output
    manifest = json.loads((Path(args[args.index("--run-dir") + 1]) / "manifest.json").read_text())
    return res.stderr, manifest


def test_resume_sees_the_judge_model_and_endpoint_from_the_environment(server, tmp_path):
    samples = [{"id": "good", "fn": "inc", "code": GOOD}, {"id": "bad", "fn": "inc", "code": WRONG}]
    args = [*_inputs(tmp_path, samples), "--no-static", "--run-dir", str(tmp_path / "run")]
    _, manifest = _resume(args, _env(server, tmp_path))
    assert manifest["judge"]["model"] == "judge-model"  # from GRADEBOX_JUDGE_MODEL
    assert manifest["judge"]["base_url"] == server.base_url
    assert manifest["judge"]["rubric_digests"]["default"].startswith("default@")
    stderr, _ = _resume(args, _env(server, tmp_path))
    assert "resuming: 2 samples" in stderr and "regraded" not in stderr
    stderr, manifest = _resume(args, _env(server, tmp_path, GRADEBOX_JUDGE_MODEL="other"))
    assert "regraded 2: judge changed (good, bad)" in stderr
    assert manifest["judge"]["model"] == "other"
    base = server.base_url.replace("127.0.0.1", "localhost")
    stderr, _ = _resume(args, _env(server, tmp_path, GRADEBOX_JUDGE_MODEL="other",
                                   GRADEBOX_JUDGE_BASE_URL=base))  # fmt: skip
    assert "regraded 2: judge changed (good, bad)" in stderr


def test_resume_sees_a_rubric_file_changed_at_the_same_path(server, tmp_path):
    rubric = tmp_path / "mine.toml"
    rubric.write_text((ROOT / "rubrics" / "intent.toml").read_text())
    args = [
        *_inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}]),
        "--no-static", "--judge-rubric", str(rubric), "--run-dir", str(tmp_path / "run"),
    ]  # fmt: skip
    _resume(args, _env(server, tmp_path))
    stderr, _ = _resume(args, _env(server, tmp_path))
    assert "regraded" not in stderr
    rubric.write_text(rubric.read_text().replace("Misses a central requirement.", "Misses one."))
    stderr, _ = _resume(args, _env(server, tmp_path))
    assert "regraded 1: rubric changed (good)" in stderr


def test_an_unreachable_judge_ends_the_run_with_one_warning(server, tmp_path):
    server.reply = lambda body: (400, {"error": {"message": "unknown model", "type": "x"}})
    samples = [{"id": "good", "fn": "inc", "code": GOOD}, {"id": "bad", "fn": "inc", "code": WRONG}]
    args = [*_inputs(tmp_path, samples), "--no-static", "--no-judge-cache"]
    rows, stderr = _grade(args, _env(server, tmp_path))
    assert {r["judge"]["status"] for r in rows.values()} == {"unavailable"}
    lines = [line for line in stderr.splitlines() if "unreachable" in line]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("gradebox grade: warning:") and "2 unavailable" in lines[0]
    assert stderr.rstrip().endswith(lines[0])


def test_a_judge_that_answers_gives_no_unreachable_warning(server, tmp_path):
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    _, stderr = _grade([*args, "--no-static", "--no-judge-cache"], _env(server, tmp_path))
    assert "unreachable" not in stderr


# -- the capability ladder, repeats and flips through `gradebox grade` --------------------------


STEADY = "def inc(x: int) -> int:\n    return x + 1\n"
FLIPPY = "def inc(x: int) -> int:\n    return 1 + x\n"


def test_judge_repeat_flags_a_flipping_verdict_and_reports_flip_rates(server, tmp_path):
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def reply(body):
        user = body["messages"][1]["content"]
        with lock:
            seen[user] = seen.get(user, 0) + 1
            nth = seen[user]
        flip = "return 1 + x" in user and nth == 2
        return 200, answer(body, "mismatch" if flip else "match")

    server.reply = reply
    args = _inputs(
        tmp_path,
        [
            {"id": "steady", "fn": "inc", "code": STEADY},
            {"id": "flippy", "fn": "inc", "code": FLIPPY},
        ],
    )
    run_dir = tmp_path / "run"
    argv = [*args, "--no-static", "--judge-repeat", "3", "--run-dir", str(run_dir), "--json"]
    rows, stderr = _grade(argv, _env(server, tmp_path))
    assert len(server.bodies) == 1 + 2 * 3  # the probe, then three judgements each
    steady, flippy = rows["steady"], rows["flippy"]
    assert (steady["verdict"], steady["judge"]["repeat"]["flipped"]) == ("pass", False)
    assert (flippy["verdict"], flippy["reason"]) == ("needs_review", "judge:unscored")
    assert flippy["judge"]["verdict"] == "match"  # the majority
    assert flippy["judge"]["repeat"]["verdicts"].count("mismatch") == 1
    summary = json.loads(stderr.strip().splitlines()[-1])
    flips = summary["judge"]["flips"]
    assert flips["items"] == 2 and flips["verdict"]["k"] == 1 and flips["flipped"] == ["flippy"]
    low, high = flips["verdict"]["ci"]
    assert low < 0.5 < high
    manifest = json.loads((run_dir / "manifest.json").read_text())
    endpoint = manifest["judge"]["endpoint"]
    assert endpoint["probe"]["capabilities"]["rung"] == "json_schema"
    assert (endpoint["repeat"], endpoint["deterministic"]) == (3, True)
    assert endpoint["fingerprints_seen"] == {"fp_test": 7}
    assert endpoint["fingerprint_changed"] is False
    assert manifest["options"]["judge_repeat"] == 3


def test_a_fingerprint_change_within_a_run_is_reported(server, tmp_path):
    calls = {"n": 0}
    lock = threading.Lock()

    def reply(body):
        with lock:
            calls["n"] += 1
            n = calls["n"]
        payload = answer(body)
        payload["system_fingerprint"] = "fp_old" if n <= 2 else "fp_new"
        return 200, payload

    server.reply = reply
    samples = [{"id": f"s{i}", "fn": "inc", "code": f"{STEADY}# {i}\n"} for i in range(3)]
    args = _inputs(tmp_path, samples)
    _, stderr = _grade(
        [*args, "--no-static", "--no-judge-cache", "--jobs", "1"], _env(server, tmp_path)
    )
    assert "backend fingerprint changed within the run" in stderr
    assert "fp_old on 1" in stderr and "fp_new on 2" in stderr


def test_a_server_answering_prose_gives_needs_review_not_unavailable(server, tmp_path):
    server.reply = lambda body: (200, completion("Looks great to me, ship it!"))
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    rows, stderr = _grade([*args, "--no-static", "--no-judge-cache"], _env(server, tmp_path))
    judge = rows["good"]["judge"]
    assert (judge["status"], judge["reason_code"]) == ("needs_review", "parse_failure")
    assert (rows["good"]["verdict"], rows["good"]["reason"]) == ("needs_review", "judge:unscored")
    assert "unreachable" not in stderr
    assert len(server.bodies) == 5 + 1  # every rung tried by the probe, then the judgement


def test_a_model_refusing_temperature_zero_runs_repeated_and_says_so(server, tmp_path):
    refusal = {
        "error": {
            "message": "Unsupported value: 'temperature' does not support 0 with this model. "
            "Only the default (1) value is supported.",
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "unsupported_value",
        }
    }
    server.reply = lambda body: (400, refusal) if "temperature" in body else (200, answer(body))
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    rows, stderr = _grade([*args, "--no-static", "--no-judge-cache"], _env(server, tmp_path))
    judge = rows["good"]["judge"]
    assert judge["status"] == "scored" and judge["repeat"]["n"] == 3
    assert rows["good"]["verdict"] == "pass"
    assert "refused temperature 0" in stderr and "non-deterministic" in stderr
    assert all("temperature" not in b for b in server.bodies[2:])


def test_judge_extra_body_reaches_the_endpoint(server, tmp_path):
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    extra = '{"provider": {"require_parameters": true}}'
    _grade(
        [*args, "--no-static", "--no-judge-cache", "--judge-extra-body", extra],
        _env(server, tmp_path),
    )
    assert all(b["provider"] == {"require_parameters": True} for b in server.bodies)
    bad = CliRunner().invoke(cli, [*args, "--judge-extra-body", "[1]"], env=_env(server, tmp_path))
    assert bad.exit_code == 2 and "must be a JSON object" in bad.output


def test_judge_probes_catch_a_judge_that_reads_names_or_obeys_the_code(server, tmp_path):
    def reply(body):
        code = body["messages"][1]["content"]
        if "ignore all previous instructions" in code:
            return 200, answer(body, "match")  # obeys the injected comment
        renamed = "v1" in code
        return 200, answer(body, "mismatch" if renamed else "match")

    server.reply = reply
    body = '    """Add one."""\n    step = 1  # one\n    result = x + step\n    return result\n'
    samples = [
        {"id": f"s{i}", "fn": "inc", "code": f"def inc(x: int) -> int:\n{body}# {i}\n"}
        for i in range(3)
    ]
    args = _inputs(tmp_path, samples)
    rows, stderr = _grade(
        [*args, "--no-static", "--no-judge-cache", "--judge-probes", "--json"],
        _env(server, tmp_path),
    )
    summary = json.loads(stderr.strip().splitlines()[-1])
    probes = summary["judge"]["invariance"]
    assert probes["rename"]["k"] == probes["rename"]["n"] == 3
    assert sorted(probes["rename"]["flipped"]) == ["s0", "s1", "s2"]
    assert probes["strip"]["k"] == 0 and probes["inject"]["k"] == 0
    assert "reorder" not in probes  # one definition: nothing to reorder
    checks = {c["probe"]: c for c in rows["s0"]["judge"]["invariance"]}
    assert checks["rename"] == {
        "probe": "rename",
        "status": "scored",
        "verdict": "mismatch",
        "flipped": True,
    }
    assert rows["s0"]["verdict"] == "pass"  # probes report; they do not decide
    text = (
        CliRunner()
        .invoke(
            cli,
            [*args, "--no-static", "--no-judge-cache", "--judge-probes"],
            env=_env(server, tmp_path),
        )
        .stderr
    )
    assert "judge probe rename: verdict flipped on 3/3" in text


def test_the_injection_probe_catches_a_judge_that_obeys_the_candidate(server, tmp_path):
    def reply(body):
        obeys = "ignore all previous instructions" in body["messages"][1]["content"]
        return 200, answer(body, "match" if obeys else "mismatch")

    server.reply = reply
    args = _inputs(tmp_path, [{"id": "wrong", "fn": "inc", "code": WRONG}])
    rows, stderr = _grade(
        [*args, "--no-static", "--no-judge-cache", "--judge-probes", "--json"],
        _env(server, tmp_path),
    )
    probes = json.loads(stderr.strip().splitlines()[-1])["judge"]["invariance"]
    assert probes["inject"]["flipped"] == ["wrong"]
    assert rows["wrong"]["verdict"] == "fail"  # and a failing test stays failed


def test_a_panel_of_models_votes_and_a_split_needs_review(server, tmp_path):
    server.reply = lambda body: (200, answer(body, "mismatch" if body["model"] == "c" else "match"))
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    run_dir = tmp_path / "run"
    argv = [*args, "--no-static", "--no-judge-cache", "--judge-model", "a,b,c", "--json"]
    rows, stderr = _grade([*argv, "--run-dir", str(run_dir)], _env(server, tmp_path))
    judge = rows["good"]["judge"]
    assert judge["model"] == "a,b,c" and judge["verdict"] == "match"
    assert [(v["model"], v["verdict"]) for v in judge["panel"]] == [
        ("a", "match"),
        ("b", "match"),
        ("c", "mismatch"),
    ]
    assert (rows["good"]["verdict"], rows["good"]["reason"]) == ("needs_review", "judge:unscored")
    assert sorted(b["model"] for b in server.bodies) == ["a", "a", "b", "b", "c", "c"]  # probes too
    summary = json.loads(stderr.strip().splitlines()[-1])["judge"]["panel"]
    assert summary["c"]["with_majority"]["k"] == 0 and summary["a"]["with_majority"]["k"] == 1
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert set(manifest["judge"]["endpoint"]["panel"]) == {"a", "b", "c"}
    assert manifest["judge"]["model"] == "a,b,c"


def test_a_panel_naming_a_model_twice_is_refused(server, tmp_path):
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    res = CliRunner().invoke(cli, [*args, "--judge-model", "a,b,a"], env=_env(server, tmp_path))
    assert res.exit_code == 2 and "names a model twice" in res.output


def test_judge_probe_then_grade_uses_the_probe_it_kept(server, tmp_path):
    cache = tmp_path / "j.sqlite"
    env = _env(server, tmp_path)
    probed = CliRunner().invoke(cli, ["judge", "probe", "--judge-cache", str(cache)], env=env)
    assert probed.exit_code == 0, probed.output
    assert len(server.bodies) == 1
    args = _inputs(tmp_path, [{"id": "good", "fn": "inc", "code": GOOD}])
    rows, _ = _grade([*args, "--no-static", "--judge-cache", str(cache)], env)
    assert rows["good"]["judge"]["status"] == "scored"
    assert len(server.bodies) == 2  # the judgement only: the run read the probe's finding
