"""`gradebox import` is bounded in cases and bytes, per row and per file (SECURITY.md).

A benchmark row is hostile input: whatever its compression (zlib), its memo
references (pickle) or its repetition (test programs), an import builds and writes
at most ``--max-row-cases``/``--max-row-bytes`` for a row and
``--max-file-cases``/``--max-file-bytes`` in all. A row over a bound is skipped with
its reason in the import report, nothing of it is written, and the rows next to it
still import.

The attacks that take gigabytes when nothing bounds them run the import in a child
process with its address space and file sizes capped (``RLIMIT_AS``,
``RLIMIT_FSIZE``): a regression fails the test, it does not take the machine.
"""

from __future__ import annotations

import base64
import gzip
import json
import pickle
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gradebox.benchmarks.bounds import OBJECT_COST, TooLarge, json_cost, loads_json
from gradebox.benchmarks.unpickle import restricted_loads
from gradebox.cli import cli

KiB, MiB, GiB = 1024, 1024**2, 1024**3
ROOT = Path(__file__).resolve().parents[3]
STDIO = ROOT / "tests" / "cases" / "benchmarks" / "stdio"
BCB = ROOT / "tests" / "cases" / "benchmarks" / "bigcodebench"

# The child caps itself before importing gradebox: 2 GiB of address space, 256 MiB a file.
_CHILD = textwrap.dedent(
    f"""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({2 * GiB}, {2 * GiB}))
    resource.setrlimit(resource.RLIMIT_FSIZE, ({256 * MiB}, {256 * MiB}))
    from gradebox.cli import main
    main()
    """
)


def _import_capped(fmt: str, source: Path, out: Path, *extra: str) -> dict[str, Any]:
    """Run ``gradebox import`` in a capped child and return its report (it must exit 0)."""
    args = [fmt, str(source), "--out", str(out), "--no-reference-check", "--json", *extra]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, "import", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,  # a safety net for a hung import, not a speed requirement
        check=False,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def _import(fmt: str, source: Path, out: Path, *extra: str) -> dict[str, Any]:
    res = CliRunner().invoke(
        cli,
        ["import", fmt, str(source), "--out", str(out), "--no-reference-check", "--json", *extra],
    )
    assert res.exit_code == 0, res.output
    report: dict[str, Any] = json.loads(res.stdout)
    return report


def _tasks(path: Path) -> set[str]:
    return {json.loads(line)["task"] for line in path.read_text().splitlines()}


def _fns(path: Path) -> set[str]:
    return {json.loads(line)["fn"] for line in path.read_text().splitlines()}


def _skipped(report: dict[str, Any]) -> dict[str, str]:
    return {s["task"]: s["why"] for s in report["skipped"]}


def _lcb_rows() -> list[dict[str, Any]]:
    return [json.loads(x) for x in (STDIO / "livecodebench.jsonl").read_text().splitlines()]


def _lcb_file(tmp_path: Path, **bad_private: str) -> Path:
    """The two stdin rows of the LiveCodeBench fixture around one bad row per keyword."""
    honest = _lcb_rows()[:2]
    bad = []
    for qid, private in bad_private.items():
        bad.append({**honest[0], "question_id": qid, "private_test_cases": private})
    path = tmp_path / "lcb.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [honest[0], *bad, honest[1]]))
    return path


def _compressed(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data, 9)).decode()


def _assert_only_honest_rows_written(out: Path, report: dict[str, Any], bad: set[str]) -> None:
    """The honest rows are written in full; of a bad row, nothing."""
    assert report["tasks"] == 2
    assert report["cases"]["stdio"] == 5  # 3 of abc900_a, 2 of 1900A: as without the bad rows
    assert _fns(out / "hidden.jsonl") == _fns(out / "public.jsonl") == {"lcb_abc900_a", "lcb_1900A"}
    assert bad <= set(_skipped(report))


# A few KB of pickle whose memo references stand for gigabytes of cases.
_BIG = "1 2\n" * (256 * KiB)  # 1 MiB of stdin
_CASE = {"input": _BIG, "output": "3\n", "testtype": "stdin"}


def _memo_bomb(kind: str) -> bytes:
    if kind == "shared_dict":  # 100,000 references to one dict: 100 GiB of cases
        return pickle.dumps([_CASE] * 100_000, protocol=4)
    if kind == "shared_string":  # 10,000 dicts (the case bound), one 1 MiB string: 10 GiB
        return pickle.dumps([{**_CASE, "output": f"{i}\n"} for i in range(10_000)], protocol=4)
    nested: Any = [_CASE]
    for _ in range(10):  # 10 levels of 10 references each: 10**10 cases of 1 MiB
        nested = [nested] * 10
    return pickle.dumps(nested, protocol=4)


@pytest.mark.parametrize("kind", ["shared_dict", "shared_string", "nested_lists"])
def test_memo_references_cannot_expand_a_row(tmp_path: Path, kind: str) -> None:
    field = _compressed(_memo_bomb(kind))
    assert len(field) < 64 * KiB
    out = tmp_path / "out"
    report = _import_capped("livecodebench", _lcb_file(tmp_path, **{kind: field}), out)
    _assert_only_honest_rows_written(out, report, {f"LiveCodeBench/{kind}"})
    assert _skipped(report)[f"LiveCodeBench/{kind}"] == (
        "private_test_cases: the pickle expands to more than --max-row-bytes (536870912)"
    )


def test_memo_references_are_counted_by_the_unpickler() -> None:
    nested: Any = "x"
    for _ in range(10):
        nested = [nested] * 10
    with pytest.raises(TooLarge, match="expands to more than"):
        restricted_loads(pickle.dumps(nested), limit=MiB)
    # The load itself is bounded: opcodes are counted as they run, even those that leave
    # nothing behind (None, pushed and popped) or only grow the unpickler's own stacks.
    for opcodes in (b"N0" * 100_000 + b"N.", b"(" * 100_000 + b"N."):
        with pytest.raises(TooLarge, match="expands to more than"):
            restricted_loads(opcodes, limit=MiB)
        assert restricted_loads(opcodes, limit=16 * MiB) is None  # counted, not refused
    loop: list[Any] = []
    loop.append(loop)  # a recursive list expands without end
    with pytest.raises(TooLarge, match="expands to more than"):
        restricted_loads(pickle.dumps(loop), limit=MiB)
    shared = "y" * 1000
    # Sharing is not refused as such: 100 references to 1,000 characters fit in 1 MiB.
    assert restricted_loads(pickle.dumps([shared] * 100), limit=MiB) == [shared] * 100


def test_json_is_counted_by_the_values_it_builds() -> None:
    # Each value costs OBJECT_COST besides its text: [[], [], ...] is 21 times its text.
    empties = "[" + ",".join(["[]"] * 10_000) + "]"
    assert json_cost(empties) == len(empties) + OBJECT_COST * 20_001
    with pytest.raises(TooLarge, match=r"decodes to about \d+ bytes, more than --max-row-bytes"):
        loads_json(empties, 10 * len(empties), "tests")
    # Structure inside strings is text: a long string of commas costs its length.
    text = json.dumps([{"input": "1,2,3:[{" * 10_000, "output": "x"}])
    assert json_cost(text) == len(text) + OBJECT_COST * 6
    assert loads_json(text, 2 * len(text), "tests")[0]["output"] == "x"


def test_counting_json_takes_linear_time_on_unterminated_strings() -> None:
    # Commas make the fast count refuse; then every escaped quote would be an opening quote
    # that a backtracking string pattern scans to the end from: hours, not milliseconds.
    code = (
        "from gradebox.benchmarks.bounds import json_cost\n"
        "n = 200_000\n"
        "print(json_cost(',' * n + '\"' + '\\\\\"' * n))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,  # the linear count takes milliseconds; the quadratic one, hours
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) == 600_001 + OBJECT_COST * 200_001


def test_a_zlib_bomb_in_one_row_skips_that_row(
    tmp_path: Path, bomb: Callable[[int], bytes]
) -> None:
    zlib_text = base64.b64encode(bomb(600)).decode()  # 600 MiB of zeros in 800 KB
    out = tmp_path / "out"
    report = _import_capped("livecodebench", _lcb_file(tmp_path, zlib=zlib_text), out)
    _assert_only_honest_rows_written(out, report, {"LiveCodeBench/zlib"})
    assert _skipped(report)["LiveCodeBench/zlib"] == (
        "private_test_cases: decompresses to more than --max-row-bytes (536870912)"
    )


def _humaneval_row(task: str, test: str) -> dict[str, str]:
    return {
        "task_id": task,
        "prompt": "def f(x):\n",
        "canonical_solution": "    return 1\n",
        "test": test,
        "entry_point": "f",
    }


def _humaneval_file(tmp_path: Path, bad_test: str) -> Path:
    honest = "def check(candidate):\n    assert candidate(1) == 1\n    assert candidate(2) == 1\n"
    rows = [
        _humaneval_row("Bench/0", honest),
        _humaneval_row("Bench/1", bad_test),
        _humaneval_row("Bench/2", honest),
    ]
    path = tmp_path / "he.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_test_program_repeating_its_setup_cannot_expand_a_row(tmp_path: Path) -> None:
    # One 1 MiB setup statement, then 1,000 checks: each check's test function repeats the
    # setup, and every case carries the whole program: 1 GiB of program, 1 TiB written.
    test = (
        f"def check(candidate):\n    x = {'a' * MiB!r}\n" + "    assert candidate(x) == 1\n" * 1000
    )
    out = tmp_path / "out"
    report = _import_capped("humaneval", _humaneval_file(tmp_path, test), out)
    assert report["tasks"] == 2 and report["cases"]["function"] == 4
    assert _fns(out / "hidden.jsonl") == {"f"}  # one entry point, never renamed
    assert _tasks(out / "hidden.jsonl") == {"Bench/0", "Bench/2"}
    why = _skipped(report)["Bench/1"]
    assert (
        why.startswith("the test program: about ")
        and "more than --max-row-bytes (536870912)" in why
    )


def test_program_cases_sharing_a_big_module_cannot_expand_a_row(tmp_path: Path) -> None:
    rows = [json.loads(x) for x in (BCB / "bigcodebench.jsonl").read_text().splitlines()]
    honest = next(r for r in rows if r["task_id"] == "BigCodeBench/9001")
    methods = "".join(
        f"    def test_{i}(self):\n        self.assertTrue(True)\n" for i in range(1000)
    )
    padding = f"PAD = {'p' * MiB!r}\n"  # every one of the 1,000 cases carries this module
    module = f"import unittest\n{padding}class TestCases(unittest.TestCase):\n{methods}"
    bad = {**honest, "task_id": "BigCodeBench/666", "entry_point": "task_func", "test": module}
    source = tmp_path / "bcb.jsonl"
    source.write_text(json.dumps(honest) + "\n" + json.dumps(bad) + "\n")
    out = tmp_path / "out"
    report = _import_capped("bigcodebench", source, out)
    assert report["tasks"] == 1
    assert _skipped(report)["BigCodeBench/666"] == (
        "its lines take more than --max-row-bytes (536870912)"
    )
    hidden = (out / "hidden.jsonl").read_text()
    assert "PAD = " not in hidden and len(hidden) < MiB


def _apps_row(pid: int, n: int) -> dict[str, Any]:
    io = {"inputs": [f"{i}\n" for i in range(n)], "outputs": [f"{i}\n" for i in range(n)]}
    return {
        "problem_id": pid,
        "question": "Echo.",
        "solutions": "[]",
        "input_output": json.dumps(io),
    }


def _apps_file(tmp_path: Path, *sizes: int) -> Path:
    path = tmp_path / "apps.jsonl"
    path.write_text("".join(json.dumps(_apps_row(p, n)) + "\n" for p, n in enumerate(sizes, 1)))
    return path


def test_a_json_row_with_too_many_cases_is_skipped(tmp_path: Path) -> None:
    apps = _apps_file(tmp_path, 2, 10_001, 10_000)
    report = _import("apps", apps, tmp_path / "apps")
    assert report["tasks"] == 2 and report["cases"]["stdio"] == 10_002
    assert _skipped(report) == {"APPS/2": "10001 cases, more than --max-row-cases (10000)"}
    assert _fns(tmp_path / "apps" / "hidden.jsonl") == {"apps_1", "apps_3"}

    many = json.dumps([{"input": "1\n", "output": "1\n", "testtype": "stdin"}] * 10_001)
    report = _import("livecodebench", _lcb_file(tmp_path, many=many), tmp_path / "lcb")
    _assert_only_honest_rows_written(tmp_path / "lcb", report, {"LiveCodeBench/many"})
    assert (
        _skipped(report)["LiveCodeBench/many"] == "10002 cases, more than --max-row-cases (10000)"
    )


def test_row_bounds_are_options(tmp_path: Path) -> None:
    apps = _apps_file(tmp_path, 3, 4)
    report = _import("apps", apps, tmp_path / "a", "--max-row-cases", "3")
    assert report["tasks"] == 1 and report["bounds"]["row_cases"] == 3
    assert _skipped(report) == {"APPS/2": "4 cases, more than --max-row-cases (3)"}
    assert _fns(tmp_path / "a" / "hidden.jsonl") == {"apps_1"}

    apps = _apps_file(tmp_path, 3, 40)
    report = _import("apps", apps, tmp_path / "b", "--max-row-bytes", "2K")
    assert report["tasks"] == 1 and report["bounds"]["row_bytes"] == 2048
    assert _skipped(report) == {
        "APPS/2": "input_output: decodes to about 6085 bytes, more than --max-row-bytes (2048)"
    }
    # A line over the bound is not decoded at all: its row is named by its line.
    report = _import("apps", apps, tmp_path / "c", "--max-row-bytes", "700")
    assert report["tasks"] == 0
    assert _skipped(report) == {
        "line 1": "the line: decodes to about 742 bytes, more than --max-row-bytes (700)",
        "line 2": "the line: 966 bytes, more than --max-row-bytes (700)",
    }
    assert (tmp_path / "c" / "hidden.jsonl").read_text() == ""


def test_file_bounds_skip_the_rows_past_them(tmp_path: Path) -> None:
    source = STDIO / "livecodebench.jsonl"
    report = _import("livecodebench", source, tmp_path / "a", "--max-file-cases", "4")
    assert report["tasks"] == 1 and report["cases"]["stdio"] == 3
    assert _skipped(report)["LiveCodeBench/1900A"] == (
        "2 cases would take the import past --max-file-cases (4): 3 admitted before it"
    )
    assert _fns(tmp_path / "a" / "hidden.jsonl") == {"lcb_abc900_a"}

    apps = _apps_file(tmp_path, 40, 40, 1)  # each 40-case row writes about 4 KB
    report = _import("apps", apps, tmp_path / "b", "--max-file-bytes", "5K")
    assert report["tasks"] == 2 and report["bounds"]["file_bytes"] == 5 * KiB
    assert "would take the import past --max-file-bytes (5120)" in _skipped(report)["APPS/2"]
    assert _fns(tmp_path / "b" / "hidden.jsonl") == {"apps_1", "apps_3"}


def test_a_gzip_bomb_source_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "bomb.jsonl.gz"
    source.write_bytes(gzip.compress(b"\n" * (16 * MiB)))
    res = CliRunner().invoke(
        cli,
        ["import", "apps", str(source), "--out", str(tmp_path / "o"), "--max-file-bytes", "1M"],
    )
    assert res.exit_code == 2, res.output
    assert f"{source}: decompresses to more than --max-file-bytes (1048576)" in res.output
    assert not (tmp_path / "o").exists()


def test_the_bounds_are_documented_in_help() -> None:
    res = CliRunner().invoke(cli, ["import", "--help"])
    assert res.exit_code == 0
    for option in ("--max-row-cases", "--max-row-bytes", "--max-file-cases", "--max-file-bytes"):
        assert option in res.output
    assert "512M" in res.output and "4G" in res.output
