"""``gradebox sample``: n completions per task from a real (scripted) OpenAI-compatible server.

The server is ``tests/support/openai_server.py`` on a real socket; the command
runs through click's runner, and once as a real process that is killed mid-run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner
from openai_server import Scripted, ScriptedServer, completion

from gradebox.cli import cli
from gradebox.runs.inputs import load_inputs

KEY = "sk-sample-canary-0123456789"
HIDDEN_VALUE = "918273645"
TASKS = [
    {"fn": "inc", "spec": "Return x plus one.", "signature": "def inc(x: int) -> int"},
    {"fn": "dbl", "spec": "Return twice x.", "signature": "def dbl(x: int) -> int"},
]


def _code_reply(body):
    prompt = body["messages"][0]["content"]
    fn = "inc" if "`inc`" in prompt else "dbl"
    op = "x + 1" if fn == "inc" else "x * 2"
    return Scripted(200, completion(f"```python\ndef {fn}(x):\n    return {op}\n```"))


@pytest.fixture
def server():
    srv = ScriptedServer().start()
    srv.responder = _code_reply
    yield srv
    srv.stop()


@pytest.fixture
def files(tmp_path):
    public = tmp_path / "public.jsonl"
    public.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    hidden = tmp_path / "hidden.jsonl"
    cases = [
        {"fn": "inc", "args": [int(HIDDEN_VALUE)], "expect": int(HIDDEN_VALUE) + 1},
        {"fn": "dbl", "args": [int(HIDDEN_VALUE)], "expect": int(HIDDEN_VALUE) * 2},
    ]
    hidden.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return public, hidden, tmp_path / "out" / "samples.jsonl"


def _env(server):
    return {
        "GRADEBOX_JUDGE_BASE_URL": server.base_url,
        "GRADEBOX_JUDGE_API_KEY": KEY,
        "GRADEBOX_SAMPLE_MODEL": "coder",
        "OPENAI_BASE_URL": None,
        "OPENAI_API_KEY": None,
    }


def _sample(server, public, out, *args):
    argv = ["sample", "--public", str(public), "--out", str(out), *args]
    return CliRunner().invoke(cli, argv, env=_env(server))


def _rows(out):
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_n_per_task_graded_by_the_same_loader_and_a_rerun_sends_nothing(server, files):
    public, hidden, out = files
    result = _sample(server, public, out, "-n", "3", "--seed", "5", "--max-tokens", "64")
    assert result.exit_code == 0, result.output
    rows = _rows(out)
    assert sorted(r["id"] for r in rows) == ["dbl#0", "dbl#1", "dbl#2", "inc#0", "inc#1", "inc#2"]
    assert {r["id"]: r["fn"] for r in rows}["inc#1"] == "inc"
    assert all(r["model"] == "judge-model-2024" and "```python" in r["reply"] for r in rows)
    bodies = server.bodies()
    assert len(bodies) == 6 and {b["model"] for b in bodies} == {"coder"}
    assert sorted(b["seed"] for b in bodies) == [5, 5, 6, 6, 7, 7]  # seed + index per task
    assert all(b["max_tokens"] == 64 and b["temperature"] == 0.8 for b in bodies)
    assert {r["meta"]["index"]: r["meta"]["seed"] for r in rows} == {0: 5, 1: 6, 2: 7}
    # The file is what gradebox grade reads: the same loader accepts every row.
    inputs = load_inputs(hidden, out, public)
    named = {getattr(s, "task", s.fn) for s in inputs.samples}  # task ids land with issue 26
    assert len(inputs.samples) == 6 and named == {"inc", "dbl"}
    again = _sample(server, public, out, "-n", "3", "--seed", "5", "--json")
    assert again.exit_code == 0 and len(server.requests) == 6  # nothing asked
    assert json.loads(again.stdout)["present"] == 6
    more = _sample(server, public, out, "-n", "4", "--tasks", "inc")
    assert more.exit_code == 0 and len(server.requests) == 7  # only inc#3
    assert sorted(r["id"] for r in _rows(out))[-1] == "inc#3"


def test_the_prompt_is_the_public_spec_and_signature_never_a_hidden_case(server, files):
    public, _, out = files
    assert _sample(server, public, out, "-n", "2").exit_code == 0
    for seen in server.requests:
        assert HIDDEN_VALUE not in seen.raw  # neither an argument nor an expected value
        prompt = seen.body["messages"][0]["content"]
        task = next(t for t in TASKS if f"`{t['fn']}`" in prompt)
        assert task["spec"] in prompt and task["signature"] in prompt
        assert "```python fenced code block" in prompt  # the documented default template


def test_a_template_of_ones_own_and_a_bad_one(server, files, tmp_path):
    public, _, out = files
    template = tmp_path / "t.txt"
    template.write_text("Implement $signature. $spec Cost: $$0.")
    assert _sample(server, public, out, "--prompt-template", str(template)).exit_code == 0
    prompts = sorted(b["messages"][0]["content"] for b in server.bodies())
    assert prompts[0] == "Implement def dbl(x: int) -> int. Return twice x. Cost: $0."
    template.write_text("Implement $signature using $hidden.")
    bad = _sample(server, public, tmp_path / "other.jsonl", "--prompt-template", str(template))
    assert bad.exit_code == 2 and "unknown placeholder(s) ['hidden']" in bad.output


def test_transient_errors_are_retried_like_the_judges(server, files):
    public, _, out = files
    server.push(
        server.error(429, "slow down", headers={"Retry-After": "0"}),
        server.error(503, "overloaded"),
    )
    result = _sample(server, public, out, "--concurrency", "1", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["requests"] == 4 and len(_rows(out)) == 2


def test_a_refusal_stops_the_run_and_the_key_never_shows(server, files):
    public, _, out = files
    server.responder = lambda body: server.error(401, f"Incorrect API key provided: {KEY}")
    result = _sample(server, public, out, "-n", "5", "--concurrency", "1")
    assert result.exit_code == 2 and "refuses to sample" in result.output
    assert KEY not in result.output and "[REDACTED]" in result.output
    assert len(server.requests) < 10  # stopped, not asked ten times


def test_a_reply_quoting_the_key_is_written_redacted(server, files):
    public, _, out = files
    server.responder = lambda body: Scripted(200, completion(f"my key is {KEY}"))
    assert _sample(server, public, out).exit_code == 0
    assert KEY not in out.read_text() and "[REDACTED]" in out.read_text()


def test_no_endpoint_or_no_model_is_a_clear_setup_error(files, tmp_path):
    public, _, out = files
    env = {"GRADEBOX_JUDGE_BASE_URL": None, "OPENAI_BASE_URL": None, "OPENAI_API_KEY": None}
    env |= {"GRADEBOX_JUDGE_API_KEY": None, "GRADEBOX_SAMPLE_MODEL": None}
    argv = ["sample", "--public", str(public), "--out", str(out)]
    result = CliRunner().invoke(cli, argv, env=env)
    assert result.exit_code == 2 and "GRADEBOX_JUDGE_BASE_URL" in result.output
    env["GRADEBOX_JUDGE_BASE_URL"] = "http://127.0.0.1:9/v1"
    result = CliRunner().invoke(cli, argv, env=env)
    assert result.exit_code == 2 and "GRADEBOX_SAMPLE_MODEL" in result.output


def test_a_torn_last_line_is_asked_again(server, files):
    public, _, out = files
    assert _sample(server, public, out).exit_code == 0
    text = out.read_text()
    keep, torn = text.splitlines(keepends=True)
    out.write_text(keep + torn[: len(torn) // 2])  # a write cut short by a kill
    assert _sample(server, public, out).exit_code == 0
    assert len(server.requests) == 3
    assert sorted(r["id"] for r in _rows(out)) == ["dbl#0", "inc#0"]


def test_a_kill_mid_run_loses_nothing(server, files):
    public, _, out = files
    release = threading.Event()
    answered = {"n": 0}
    lock = threading.Lock()

    def first_three_then_hold(body):
        with lock:
            answered["n"] += 1
            nth = answered["n"]
        if nth > 3:
            release.wait(60)  # held until the sampler is killed
        return _code_reply(body)

    server.responder = first_three_then_hold
    env = {**os.environ, **{k: v for k, v in _env(server).items() if v is not None}}
    env.pop("OPENAI_BASE_URL", None)
    env.pop("OPENAI_API_KEY", None)
    argv = [sys.executable, "-c", "from gradebox.cli import main; main()", "sample"]
    argv += ["--public", str(public), "--out", str(out), "-n", "4", "--concurrency", "1"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (out.exists() and out.read_text().count("\n") >= 3):
            assert proc.poll() is None and time.monotonic() < deadline, "no progress"
            time.sleep(0.02)
        while len(server.requests) < 4:  # the fourth request is in flight, held
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()
    kept = _rows(out)
    assert len(kept) == 3 and all(r["reply"] for r in kept)  # every finished row is whole
    before = len(server.requests)
    assert _sample(server, public, out, "-n", "4").exit_code == 0
    assert len(server.requests) - before == 8 - 3  # only what the kill left unwritten
    ids = [r["id"] for r in _rows(out)]
    assert sorted(ids) == sorted(f"{t}#{i}" for t in ("inc", "dbl") for i in range(4))


def test_the_sample_module_is_where_task_names_are_made(files):
    from gradebox.sampling import sample_id
    from sandbox.cases import load_public

    tasks, _ = load_public(files[0])
    assert sample_id(tasks["inc"], 2) == "inc#2"


def test_tasks_sharing_an_entry_point_are_sampled_and_named_by_id(server, tmp_path):
    """Two tasks whose cases both call ``inc`` (as HumanEval's duplicated entry points)."""
    public = tmp_path / "public.jsonl"
    tasks = [
        {"task": "Bench/1", "fn": "inc", "spec": "Return x plus one.",
         "signature": "def inc(x: int) -> int"},
        {"task": "Bench/2", "fn": "inc", "spec": "Return x plus one, again.",
         "signature": "def inc(x: int) -> int"},
    ]  # fmt: skip
    public.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    hidden = tmp_path / "hidden.jsonl"
    hidden.write_text("".join(json.dumps({"task": t, "fn": "inc", "args": [1], "expect": 2}) + "\n"
                              for t in ("Bench/1", "Bench/2")))  # fmt: skip
    out = tmp_path / "samples.jsonl"
    assert _sample(server, public, out, "-n", "1").exit_code == 0
    rows = _rows(out)
    assert sorted((r["id"], r["task"], r["fn"]) for r in rows) == [
        ("Bench/1#0", "Bench/1", "inc"), ("Bench/2#0", "Bench/2", "inc"),
    ]  # fmt: skip
    inputs = load_inputs(hidden, out, public)
    assert sorted(s.task for s in inputs.samples) == ["Bench/1", "Bench/2"]
