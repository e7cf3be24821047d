"""Every report file that can name hidden cases is the owner's only (0600), an old one included.

The grade command's files are checked end to end in ``tests/gradebox/runs/test_private.py``;
here each report writer is checked on its own over a file that already exists
world-readable (0644 under umask 022), as a report from an earlier run would;
and ``suite grow``, whose output is new hidden cases.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.cli import cli
from gradebox.cli.gate import _reports
from gradebox.grade import Grade
from gradebox.patches.model import GateRow
from gradebox.reports.html import write_html
from gradebox.reports.junit import write_junit

GOLDEN = Path(__file__).resolve().parents[2] / "cases" / "golden" / "results.jsonl"
PROPS = Path(__file__).resolve().parents[2] / "cases" / "suites" / "props"


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _old(path: Path) -> Path:
    path.write_text("an earlier report\n")
    path.chmod(0o644)
    return path


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _explained() -> list[Grade]:
    rows = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    return [Grade.from_row(r) for r in rows if r["id"].endswith("-explained")]


def test_html_and_junit_narrow_an_existing_report(tmp_path, umask_022):
    grades = _explained()
    assert any(g.tests.explain for g in grades)  # hidden arguments in the report
    html, xml = _old(tmp_path / "report.html"), _old(tmp_path / "junit.xml")
    write_html(grades, None, html)
    write_junit(grades, xml)
    assert (_mode(html), _mode(xml)) == (0o600, 0o600)
    assert "an earlier report" not in html.read_text() + xml.read_text()
    new = tmp_path / "new.html"
    write_html(grades, None, new)
    assert _mode(new) == 0o600


def test_the_gates_reports_are_the_owners_only(tmp_path, umask_022):
    rows = [GateRow("g1", "fail", "fail_to_pass", detail="tests/test_x.py::test_hidden failed")]
    paths = {
        "report": _old(tmp_path / "report.json"),
        "sarif_path": _old(tmp_path / "gate.sarif"),
        "junit_path": _old(tmp_path / "junit.xml"),
        "comment_path": tmp_path / "comment.md",  # a new one too
    }
    _reports(rows, dict(paths))
    assert {name: _mode(p) for name, p in paths.items()} == dict.fromkeys(paths, 0o600)
    assert json.loads(paths["report"].read_text())  # written, not only narrowed


def test_suite_grow_writes_its_hidden_cases_for_the_owner_only(tmp_path, umask_022):
    out = _old(tmp_path / "new-hidden.jsonl")
    res = CliRunner().invoke(cli, [
        "suite", "grow", "--hidden", str(PROPS / "hidden.jsonl"),
        "--properties", str(PROPS / "properties.jsonl"),
        "--reference", str(PROPS / "reference.jsonl"), "--out", str(out), "--seed", "3",
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert _mode(out) == 0o600
    assert '"expect"' in out.read_text()  # hidden cases, with their expected values
