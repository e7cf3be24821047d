"""Run directories: input hashes, resuming, the manifest, strict results reading."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from gradebox.errors import BadInput
from gradebox.runs.fingerprint import changed_parts, combine, fingerprints
from gradebox.runs.rundir import HASH_FIELD, RunDir, read_results, tool_versions
from sandbox.types import Limits

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def inputs(tmp_path):
    for name in ("hidden.jsonl", "public.jsonl", "samples.jsonl"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    return tmp_path / "hidden.jsonl", tmp_path / "samples.jsonl", tmp_path / "public.jsonl"


def _edit(path: Path, change) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(change(obj)) + "\n" for obj in lines))


def _ids_of(fn: str) -> set[str]:
    rows = [json.loads(line) for line in (EXAMPLES / "samples.jsonl").read_text().splitlines()]
    return {r["id"] for r in rows if r["fn"] == fn}


def input_hashes(hidden, samples, public=None, *, options=None):
    prints = fingerprints(
        hidden=hidden,
        samples=samples,
        public=public,
        files={},
        judge=None,
        tools={},
        limits=Limits(),
        options=options or {},
    )
    return {sid: combine(parts) for sid, parts in prints.items()}


def _changed(a: dict[str, str], b: dict[str, str]) -> set[str]:
    return {k for k in a if a[k] != b.get(k)}


def test_hashes_cover_every_sample_and_are_stable(inputs):
    a = input_hashes(*inputs)
    assert len(a) == 17 and all(len(h) == 64 for h in a.values())
    assert input_hashes(*inputs) == a
    assert len(set(a.values())) == 17


def test_reformatting_a_file_changes_nothing(inputs):
    before = input_hashes(*inputs)
    _edit(inputs[0], lambda o: dict(reversed(list(o.items()))))  # same data, other key order
    assert input_hashes(*inputs) == before


def test_a_changed_sample_changes_only_its_hash(inputs):
    before = input_hashes(*inputs)
    _edit(
        inputs[1],
        lambda o: o | {"code": "def mean(xs): return 0\n"} if o["id"] == "mean-good" else o,
    )
    assert _changed(before, input_hashes(*inputs)) == {"mean-good"}


def test_changed_hidden_cases_change_every_sample_of_that_task(inputs):
    before = input_hashes(*inputs)
    _edit(inputs[0], lambda o: o | {"tol": 1e-6} if o["fn"] == "mean" and "tol" in o else o)
    assert _changed(before, input_hashes(*inputs)) == _ids_of("mean")


def test_changed_public_task_changes_every_sample_of_that_task(inputs):
    before = input_hashes(*inputs)
    _edit(inputs[2], lambda o: o | {"allow_loops": True} if o["fn"] == "is_even" else o)
    assert _changed(before, input_hashes(*inputs)) == _ids_of("is_even")


def test_options_change_every_hash(inputs):
    before = input_hashes(*inputs, options={"case_timeout_s": 2.0})
    after = input_hashes(*inputs, options={"case_timeout_s": 5.0})
    assert _changed(before, after) == set(before)
    assert input_hashes(*inputs, options={"case_timeout_s": 2.0}) == before


def test_changed_parts_name_what_changed():
    old = {"sample": "a", "hidden": "b", "lockfile": "c"}
    assert changed_parts(old, old | {"lockfile": "d"}) == ["lockfile"]
    assert changed_parts(old, old | {"sample": "x", "hidden": "y"}) == ["sample", "hidden"]
    assert changed_parts(None, old) == ["unknown"]


def test_fingerprints_round_trip_through_the_run_dir(tmp_path, inputs):
    run = RunDir(tmp_path / "run")
    assert run.read_fingerprints() == {}
    prints = fingerprints(
        hidden=inputs[0], samples=inputs[1], public=inputs[2], files={}, judge=None,
        tools={"gradebox": "1"}, limits=Limits(), options={},
    )  # fmt: skip
    run.write_fingerprints(prints)
    assert run.read_fingerprints() == prints


def _rows(ids, **extra):
    """Whole rows (as ``gradebox grade`` writes them), one per id."""
    base = {
        "pass": True, "verdict": "pass", "reason": "ok", "failed": [], "timeouts": [],
        "outcomes": ["ok"], "gate": {"syntax": "ok", "banned": [], "contract": "ok"},
        "claim": "none", "latency_ms": 1.0, "infra_error": None, "static": None, "judge": None,
    }  # fmt: skip
    return [{"id": i, "fn": "f"} | base | extra for i in ids]


def test_resume_keeps_matching_rows_and_drops_the_rest(tmp_path):
    run = RunDir(tmp_path / "run")
    hashes = {"a": "h1", "b": "h2", "c": "h3", "d": "h4"}
    with run.append_results() as out:
        for row in _rows(["a", "b"]):
            out.write(row, hashes[row["id"]])
        out.write(_rows(["c"])[0], "stale")  # graded with other inputs
        out.write(
            _rows(["d"], verdict="needs_review", reason="infra_error", infra_error="x")[0], "h4"
        )
        out.write(_rows(["gone"])[0], "h9")  # no longer in the input
    with run.results.open("a") as fh:
        fh.write('{"id": "e", "fn": "f", "pa')  # torn by a crash
    assert run.done_ids(hashes | {"e": "h5"}) == {"a", "b"}
    kept = run.resume(hashes)
    assert set(kept) == {"a", "b"}
    assert [json.loads(line)["id"] for line in run.results.read_text().splitlines()] == ["a", "b"]
    with run.append_results() as out:
        for sid in ("d", "c"):
            out.write(_rows([sid])[0], hashes[sid])
    run.reorder(["d", "c", "b", "a"])
    rows = read_results(run.path)
    assert [r["id"] for r in rows] == ["d", "c", "b", "a"]
    assert [r[HASH_FIELD] for r in rows] == ["h4", "h3", "h2", "h1"]
    assert run.done_ids(hashes) == {"a", "b", "c", "d"}


def test_a_row_that_does_not_read_back_as_a_grade_is_graded_again(tmp_path):
    """A hand-edited row (verdict pass, a failing outcome) is not trusted on resume."""
    run = RunDir(tmp_path / "run")
    with run.append_results() as out:
        out.write(_rows(["a"])[0], "h1")
        out.write(_rows(["b"], outcomes=["wrong"])[0], "h2")  # says pass, a case failed
        out.write(_rows(["c"], outcomes=["maybe"])[0], "h3")  # not an outcome
    assert set(run.resume({"a": "h1", "b": "h2", "c": "h3"})) == {"a"}


def test_resume_in_an_empty_directory(tmp_path):
    run = RunDir(tmp_path / "new" / "run")
    assert run.done_ids({"a": "h"}) == set()
    assert run.resume({"a": "h"}) == {}
    assert run.results.read_text() == ""


def test_rows_with_lone_surrogates_survive_a_rewrite(tmp_path):
    run = RunDir(tmp_path)
    run.results.write_text(json.dumps(_rows(["a"], detail="\ud800")[0] | {HASH_FIELD: "h"}) + "\n")
    assert run.resume({"a": "h"})["a"]["detail"] == "\ud800"
    assert json.loads(run.results.read_text())["detail"] == "\ud800"


def test_manifest(tmp_path, inputs):
    run = RunDir(tmp_path / "run")
    judge = {"model": "m-2024", "system_fingerprint": "fp_1", "rubric": "default@1"}
    rows = _rows(["a"], judge=judge) + _rows(["b"], judge={"status": "skipped", "model": ""})
    m = run.write_manifest(
        inputs={"hidden": inputs[0], "samples": inputs[1], "public": inputs[2], "lockfile": None},
        isolation="bwrap",
        limits=Limits(case_timeout_s=3.0),
        judge_model="m",
        rows=rows,
        options={"static": True},
        argv=["gradebox", "grade"],
        resumed=1,
    )
    on_disk = json.loads(run.manifest.read_text())
    assert on_disk == json.loads(json.dumps(m))
    assert on_disk["isolation"]["backend"] == "bwrap"
    assert on_disk["isolation"]["limits"]["case_timeout_s"] == 3.0
    assert on_disk["judge"] == {
        "model": "m",
        "base_url": None,
        "rubric_digests": {},
        "models_seen": ["m-2024"],
        "system_fingerprints": ["fp_1"],
        "rubrics": ["default@1"],
    }
    hidden = on_disk["inputs"]["hidden"]
    assert hidden["sha256"] == hashlib.sha256(inputs[0].read_bytes()).hexdigest()
    assert hidden["bytes"] == inputs[0].stat().st_size
    assert on_disk["inputs"]["lockfile"] is None
    for tool in ("python", "gradebox", "ruff", "mypy", "bandit"):
        assert on_disk["tools"][tool], tool
    assert on_disk["samples"] == {"rows": 2, "resumed": 1}
    again = run.write_manifest(inputs={}, isolation="none", limits={}, judge_model=None)
    assert again["created"] == m["created"]


def test_tool_versions_say_none_for_what_is_missing():
    versions = tool_versions()
    assert versions["python"].count(".") == 2
    assert set(versions) >= {"gradebox", "ruff", "mypy", "bandit"}


def test_summary_and_paths(tmp_path):
    run = RunDir(tmp_path / "r")
    run.write_summary({"samples": 1, "pass@1": 1.0})
    assert json.loads(run.summary.read_text()) == {"samples": 1, "pass@1": 1.0}
    names = [
        p.name for p in (run.results, run.summary, run.manifest, run.html, run.junit, run.sarif)
    ]
    assert names == ["results.jsonl", "summary.json", "manifest.json", "report.html", "junit.xml",
                     "static.sarif"]  # fmt: skip
    assert not list(run.path.glob(".*")), "no temporary file is left behind"


def test_read_results_reports_every_bad_line(tmp_path):
    path = tmp_path / "results.jsonl"
    good = _rows(["a"])[0]
    lines = [
        json.dumps(good),
        json.dumps(good | {"pass": False}),
        json.dumps({"id": "b"}),
        json.dumps(good | {"id": "c", "outcomes": ["maybe"]}),
        json.dumps(good),
    ]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BadInput) as err:
        read_results(path)
    problems = err.value.problems
    assert problems[0] == f"{path}:2: pass: False disagrees with verdict 'pass'"
    assert f"{path}:3: 'fn' is a required property" in problems
    assert any(p.startswith(f"{path}:4: outcomes/0: ") for p in problems)
    assert problems[-1] == f"{path}:5: id: sample id 'a' already has a row on line 1"


def test_read_results_empty_and_missing(tmp_path):
    (tmp_path / "e.jsonl").write_text("")
    with pytest.raises(BadInput, match="file is empty"):
        read_results(tmp_path / "e.jsonl")
    with pytest.raises(BadInput, match="no such file"):
        read_results(tmp_path / "missing.jsonl")


def test_resume_keeps_offsets_not_rows_and_reads_kept_rows_back(tmp_path):
    from gradebox.runs.rundir import KeptRows, Previous

    run = RunDir(tmp_path / "run")
    hashes = {"a": "h1", "b": "h2", "c": "h3"}
    with run.append_results() as out:
        out.write(_rows(["a"], latency_ms=1.0)[0], "h1")
        out.write(_rows(["b"])[0], "old")
        out.write(_rows(["a"], latency_ms=2.0)[0], "h1")  # the later row of an id decides
        out.write(
            _rows(["c"], verdict="needs_review", reason="infra_error", infra_error="x")[0], "h3"
        )
    kept, previous = run.resume_with_previous(hashes)
    assert isinstance(kept, KeptRows) and set(kept) == {"a"} and "b" not in kept
    assert all(isinstance(v, int) for v in vars(kept)["_offsets"].values())  # no row held
    assert kept["a"]["latency_ms"] == 2.0 and kept["a"][HASH_FIELD] == "h1"
    assert previous == {
        "a": Previous("h1", False), "b": Previous("old", False), "c": Previous("h3", True),
    }  # fmt: skip
    with run.append_results() as out:  # new rows go after the kept ones: offsets still hold
        out.write(_rows(["b"])[0], "h2")
    assert kept["a"]["latency_ms"] == 2.0
    assert kept == {"a": kept["a"]}


def test_reorder_keeps_the_last_row_of_an_id_at_its_first_place(tmp_path):
    run = RunDir(tmp_path / "run")
    with run.append_results() as out:
        out.write(_rows(["a"], latency_ms=1.0)[0], "h")
        out.write(_rows(["z"])[0], "h")
        out.write(_rows(["a"], latency_ms=2.0)[0], "h")
    with run.results.open("a") as fh:
        fh.write('{"id": "torn", "fn"')
    run.reorder(["b", "a"])
    rows = [json.loads(line) for line in run.results.read_text().splitlines()]
    assert [(r["id"], r["latency_ms"]) for r in rows] == [("a", 2.0), ("z", 1.0)]


def test_the_manifest_reads_its_rows_once(tmp_path):
    run = RunDir(tmp_path / "run")
    reads = []

    def rows():
        reads.append(1)
        for k in range(3):
            yield {"id": f"s{k}", "judge": {"model": f"m{k % 2}", "rubric": "r@1"}}

    manifest = run.write_manifest(
        inputs={}, isolation="bwrap", limits={}, judge_model=None, rows=rows()
    )
    assert reads == [1] and manifest["samples"]["rows"] == 3
    assert manifest["judge"]["models_seen"] == ["m0", "m1"]
    assert manifest["judge"]["rubrics"] == ["r@1"]
