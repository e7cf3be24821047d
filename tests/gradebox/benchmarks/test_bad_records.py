"""Bad benchmark records are bad input (exit 2, ``file:line: what is wrong``), never a crash.

The table is ``tests/cases/benchmarks/bad_records.jsonl``: a format, the file's text,
and what the message must say.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.cli import cli

ROWS = [
    json.loads(line)
    for line in (Path(__file__).resolve().parents[2] / "cases" / "benchmarks" / "bad_records.jsonl")
    .read_text()
    .splitlines()
]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_bad_record_is_reported_with_file_and_line(row: dict, tmp_path: Path) -> None:
    source = tmp_path / "bench.jsonl"
    if "bytes_hex" in row:
        source.write_bytes(bytes.fromhex(row["bytes_hex"]))
    else:
        source.write_text(row["text"])
    out = tmp_path / "out"
    res = CliRunner().invoke(
        cli, ["import", row["format"], str(source), "--out", str(out), "--no-reference-check"]
    )
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "bad input" in res.output
    assert row["contains"] in res.output, res.output
    assert not out.exists(), "nothing is written when the input is bad"
