"""Resuming a run directory: one test per fingerprint part, and whole-run outputs.

Every run is the real CLI on the real sandbox with the real static tools. One
fresh run (module fixture) is copied per test; each test changes one thing and
runs again into the copy.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.cli import cli
from gradebox.runs.fingerprint import combine

ROOT = Path(__file__).resolve().parents[3]
PROPS = ROOT / "tests/cases/suites/props"
JUDGE_VARS = (
    "GRADEBOX_JUDGE_BASE_URL",
    "GRADEBOX_JUDGE_API_KEY",
    "GRADEBOX_JUDGE_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)
NO_JUDGE = dict.fromkeys(JUDGE_VARS)

HIDDEN = [
    {"fn": "inc", "args": [1], "expect": 2, "name": "one"},
    {"fn": "inc", "args": [-1], "expect": 0, "name": "minus one"},
    {"fn": "dbl", "args": [2], "expect": 4},
]
PUBLIC = [
    {"fn": "inc", "spec": "Return x plus one.", "signature": "def inc(x: int) -> int"},
    {"fn": "dbl", "spec": "Return twice x.", "signature": "def dbl(x: int) -> int"},
]
SAMPLES = [
    {"id": "a", "fn": "inc", "code": "import json\n\n\ndef inc(x):\n    return x + 1\n"},
    {"id": "b", "fn": "inc", "code": "def inc(x):\n    return x\n"},
    {"id": "c", "fn": "dbl", "code": "def dbl(x: int) -> int:\n    return x * 2\n"},
    {"id": "d", "fn": "dbl", "code": "def dbl(x):\n    return eval('x * 2')\n"},
]
ALL = ["a", "b", "c", "d"]


def _jsonl(path: Path, objs: list[dict]) -> None:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))


def _args(d: Path) -> list[str]:
    return [
        "grade",
        "--hidden", str(d / "hidden.jsonl"),
        "--public", str(d / "public.jsonl"),
        "--samples", str(d / "samples.jsonl"),
        "--lockfile", str(d / "requirements.txt"),
        "--static-policy", str(d / "policy.toml"),
        "--no-judge",
        "--jobs", "2",
        "--out", str(d / "out.jsonl"),
        "--sarif", str(d / "s.sarif"),
        "--run-dir", str(d / "run"),
    ]  # fmt: skip


def _invoke(args: list[str], env: dict[str, str | None] | None = None):
    res = CliRunner().invoke(cli, args, env=env or NO_JUDGE)
    assert res.exit_code == 0, res.output
    return res


def _regraded(stderr: str) -> dict[str, list[str]]:
    """``{reason: [ids]}`` from the ``regraded N: reason (ids)`` lines."""
    out = {}
    for m in re.finditer(r"^regraded (\d+): (.+) \((.*)\)$", stderr, re.M):
        ids = m.group(3).split(", ")
        assert len(ids) == int(m.group(1))
        out[m.group(2)] = ids
    return out


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _sarif_count(path: Path) -> int:
    return len(json.loads(path.read_text())["runs"][0]["results"])


def _findings(rows: list[dict]) -> int:
    return sum(len(r["static"]["findings"]) for r in rows if r["static"])


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    d = tmp_path_factory.mktemp("first")
    _jsonl(d / "hidden.jsonl", HIDDEN)
    _jsonl(d / "public.jsonl", PUBLIC)
    _jsonl(d / "samples.jsonl", SAMPLES)
    (d / "requirements.txt").write_text("requests==2.31.0\n")
    (d / "policy.toml").write_text('[policy]\nfail_on = [{layer = "security", rules = ["B307"]}]\n')
    res = _invoke(_args(d))
    return d, res


@pytest.fixture
def run(first, tmp_path):
    """A copy of the first run (inputs, outputs, run dir) under tmp_path."""
    src, _ = first
    for p in src.iterdir():
        (shutil.copytree if p.is_dir() else shutil.copy)(p, tmp_path / p.name)
    # the run dir records paths; a copy elsewhere differs only in paths, which are not hashed
    return tmp_path


def test_a_fresh_run_dir_keeps_every_output_and_a_complete_sarif(first):
    d, res = first
    run = d / "run"
    for name in ("results.jsonl", "summary.json", "manifest.json", "static.sarif", "junit.xml",
                 "report.html", "fingerprints.json"):  # fmt: skip
        assert (run / name).is_file(), name
    rows = _rows(run / "results.jsonl")
    assert _findings(rows) > 0
    assert _sarif_count(run / "static.sarif") == _findings(rows)
    assert _sarif_count(d / "s.sarif") == _findings(rows)
    assert "regraded" not in res.stderr and "resuming" not in res.stderr


def test_nothing_changed_nothing_is_regraded_and_every_output_is_whole(run):
    res = _invoke(_args(run))
    assert "resuming: 4 samples already graded" in res.stderr
    assert _regraded(res.stderr) == {}
    out = _rows(run / "out.jsonl")
    assert [r["id"] for r in out] == ALL
    assert all("input_sha256" not in r for r in out)
    kept = _rows(run / "run" / "results.jsonl")
    assert [r["id"] for r in kept] == ALL
    assert _sarif_count(run / "s.sarif") == _findings(out) == _sarif_count(run / "run/static.sarif")
    junit = (run / "run" / "junit.xml").read_text()
    assert junit.count("<testcase ") == 4
    summary = json.loads((run / "run" / "summary.json").read_text())
    assert summary["samples"] == 4
    assert summary["resume"] == {"kept": 4, "graded": 0, "regraded": {}}


def test_the_newcomer_scenario_one_changed_sample_of_four(run, first):
    """Change 1 of 4 samples: --out has 4 rows and SARIF has every finding of the run."""
    before = _rows(first[0] / "out.jsonl")
    samples = [dict(s) for s in SAMPLES]
    samples[1]["code"] = "import sys\n\n\ndef inc(x):\n    return x + 1\n"
    _jsonl(run / "samples.jsonl", samples)
    res = _invoke(_args(run))
    assert _regraded(res.stderr) == {"sample changed": ["b"]}
    out = _rows(run / "out.jsonl")
    assert [r["id"] for r in out] == ALL
    assert out[1]["verdict"] != before[1]["verdict"]
    assert [r for i, r in enumerate(out) if i != 1] == [r for i, r in enumerate(before) if i != 1]
    assert _findings(out) > _findings(before)
    assert _sarif_count(run / "s.sarif") == _findings(out)
    assert _sarif_count(run / "run" / "static.sarif") == _findings(out)
    html = (run / "run" / "report.html").read_text()
    assert all(f'<span class="id">{i}</span>' in html for i in ALL)


@pytest.mark.parametrize(
    ("change", "reason", "ids"),
    [
        ("hidden", "hidden changed", ["a", "b"]),
        ("public", "public changed", ["c", "d"]),
        ("lockfile", "lockfile changed", ALL),
        ("policy", "static_policy changed", ALL),
    ],
)
def test_a_changed_file_at_the_same_path_regrades_exactly_its_samples(run, change, reason, ids):
    if change == "hidden":
        extra = {"fn": "inc", "args": [5], "expect": 6}
        _jsonl(run / "hidden.jsonl", [*HIDDEN[:2], extra, HIDDEN[2]])
    elif change == "public":
        _jsonl(run / "public.jsonl", [PUBLIC[0], PUBLIC[1] | {"spec": "Return 2 * x."}])
    elif change == "lockfile":
        (run / "requirements.txt").write_text("requests==2.32.0\n")
    else:
        (run / "policy.toml").write_text('[policy]\nreview_on = [{layer = "lint"}]\n')
    res = _invoke(_args(run))
    assert _regraded(res.stderr) == {reason: ids}
    assert [r["id"] for r in _rows(run / "out.jsonl")] == ALL
    summary = json.loads((run / "run" / "summary.json").read_text())
    assert summary["resume"]["regraded"] == {reason: len(ids)}
    manifest = json.loads((run / "run" / "manifest.json").read_text())
    role = {"policy": "static_policy"}.get(change, change)

    path = {"policy": "policy.toml", "lockfile": "requirements.txt"}.get(change, f"{change}.jsonl")
    digest = hashlib.sha256((run / path).read_bytes()).hexdigest()
    assert manifest["inputs"][role]["sha256"] == digest


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--case-timeout", "1.5"], "limits changed"),
        (["--memory-mb", "512"], "limits changed"),
        (["--banned-imports", "json"], "options changed"),
    ],
)
def test_changed_limits_or_options_regrade_everything(run, extra, reason):
    res = _invoke([*_args(run), *extra])
    assert _regraded(res.stderr) == {reason: ALL}


@pytest.mark.parametrize("tool", ["gradebox", "ruff", "mypy", "bandit", "sandbox_python"])
def test_a_tool_version_change_regrades_everything(run, tool):
    """The earlier run's record says another version: as if the tool was upgraded since."""
    rundir = run / "run"
    prints = json.loads((rundir / "fingerprints.json").read_text())
    for parts in prints["samples"].values():
        parts[tool] = "0" * 64
    (rundir / "fingerprints.json").write_text(json.dumps(prints))
    rows = _rows(rundir / "results.jsonl")
    for r in rows:
        r["input_sha256"] = combine(prints["samples"][r["id"]])
    _jsonl(rundir / "results.jsonl", rows)
    res = _invoke(_args(run))
    assert _regraded(res.stderr) == {f"{tool} changed": ALL}


def test_sandbox_interpreter_and_tool_versions_are_in_the_manifest(first):
    manifest = json.loads((first[0] / "run" / "manifest.json").read_text())
    tools = manifest["tools"]
    assert all(tools[t] for t in ("gradebox", "ruff", "mypy", "bandit"))
    assert re.match(r"/\S+ 3\.\d+", tools["sandbox_python"])
    assert manifest["inputs"]["static_policy"]["sha256"]
    assert manifest["inputs"]["lockfile"]["sha256"]


def test_changed_reference_or_properties_regrade_everything(tmp_path):
    for name in ("hidden.jsonl", "reference.jsonl", "properties.jsonl"):
        shutil.copy(PROPS / name, tmp_path / name)
    _jsonl(tmp_path / "samples.jsonl", [
        {"id": "p", "fn": "absolute", "code": "def absolute(x):\n    return abs(x)\n"},
        {"id": "q", "fn": "absolute", "code": "def absolute(x):\n    return x\n"},
    ])  # fmt: skip
    args = [
        "grade",
        "--hidden", str(tmp_path / "hidden.jsonl"),
        "--samples", str(tmp_path / "samples.jsonl"),
        "--reference", str(tmp_path / "reference.jsonl"),
        "--properties", str(tmp_path / "properties.jsonl"),
        "--no-static", "--no-judge", "--jobs", "2",
        "--run-dir", str(tmp_path / "run"),
    ]  # fmt: skip
    _invoke(args)
    assert _regraded(_invoke(args).stderr) == {}
    ref = (tmp_path / "reference.jsonl").read_text().replace("x >= 0", "0 <= x")
    (tmp_path / "reference.jsonl").write_text(ref)
    assert _regraded(_invoke(args).stderr) == {"reference changed": ["p", "q"]}
    props = (tmp_path / "properties.jsonl").read_text().replace('"seed": 1}', '"seed": 2}')
    (tmp_path / "properties.jsonl").write_text(props)
    assert _regraded(_invoke(args).stderr) == {"properties changed": ["p", "q"]}


def test_run_dir_without_out_writes_every_row_to_stdout(run):
    args = [a for a in _args(run) if a not in ("--out", str(run / "out.jsonl"))]
    res = _invoke(args)
    assert [json.loads(line)["id"] for line in res.stdout.splitlines()] == ALL
