"""SARIF and JUnit are written from grades read back one at a time: same documents, no list."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from gradebox.grade import Grade
from gradebox.reports.junit import NotRun, to_junit, write_junit
from gradebox.reports.sarif import write_sarif
from static.findings import Finding
from static.sarif import to_sarif

GOLDEN = Path(__file__).resolve().parents[2] / "cases" / "golden" / "results.jsonl"


def _rows() -> list[dict]:
    rows = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    fns = ["b", "a", "c"]
    return [r | {"id": f"s{k}", "fn": fns[k % 3]} for k, r in enumerate(rows * 3)]


def _grades() -> list[Grade]:
    return [Grade.from_row(r) for r in _rows()]


def _whole_run_sarif(grades: list[Grade], sources: dict[str, str], version: str) -> dict:
    """The log as it was built before: one to_sarif call over every sample."""
    results = []
    for g in grades:
        if g.static is not None:
            findings = [
                Finding(f.layer, f.rule, f.severity, f.line, f.col, f.message)
                for f in g.static.findings
            ]
            results.append((g.id, f"candidates/{g.id}.py", findings))
    return to_sarif(results, version, sources=sources)


@pytest.mark.parametrize("static_ran", [True, False])
def test_streamed_sarif_is_the_whole_run_log(static_ran: bool) -> None:
    grades = _grades()
    with_findings = [g.id for g in grades if g.static and g.static.findings]
    assert len(with_findings) > 3 and len({f.rule for g in grades if g.static
                                           for f in g.static.findings}) > 1  # fmt: skip
    sources = {sid: "import os\nx = 1\n" for sid in with_findings[::2]}
    reads: list[int] = []

    def again() -> Iterator[Grade]:
        reads.append(1)
        yield from (Grade.from_row(r) for r in _rows())

    out = io.StringIO()
    n = write_sarif(again, out, version="9.9", sources=sources, static_ran=static_ran)
    got = json.loads(out.getvalue())
    want = _whole_run_sarif(grades, sources, "9.9")
    if not static_ran:
        want["runs"][0]["properties"] = {"static_layers": "not run (--no-static)"}
    assert got == want
    assert n == len(want["runs"][0]["results"]) > 0
    assert len(reads) == 2  # two passes over the grades, never a list of them


def test_streamed_sarif_of_a_run_without_findings() -> None:
    out = io.StringIO()
    assert write_sarif(lambda: iter(()), out, version="1", sources={}) == 0
    assert json.loads(out.getvalue()) == to_sarif([], "1")


def _tree_bytes(grades: list[Grade], not_run: tuple[NotRun, ...]) -> bytes:
    tree = to_junit(grades, not_run=not_run)
    ET.indent(tree, space=" ")
    buf = io.BytesIO()
    tree.write(buf, encoding="utf-8", xml_declaration=True)
    return buf.getvalue() + b"\n"


@pytest.mark.parametrize("count", [0, 1, 7, 66])
@pytest.mark.parametrize("not_run", [(), (NotRun("x", "a", "bad line"), NotRun("y", "zz", "gone"))])
def test_streamed_junit_is_the_tree_byte_for_byte(tmp_path, count, not_run) -> None:
    grades = _grades()[:count]
    path = tmp_path / "junit.xml"
    write_junit(iter(grades), path, not_run=not_run)  # an iterator: read once
    assert path.read_bytes() == _tree_bytes(grades, not_run)
