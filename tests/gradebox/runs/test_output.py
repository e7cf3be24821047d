"""Rows go to disk as they finish and are read back from there; sources are extracted on demand."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from gradebox.model import Sample
from gradebox.runs.output import LazySources, RunOutput
from gradebox.runs.summary import summarize

GOLDEN = Path(__file__).resolve().parents[2] / "cases" / "golden" / "results.jsonl"


@dataclass(frozen=True)
class _Config:
    """The two fields of a RunConfig that RunOutput reads for rows."""

    out: Path | None = None
    run_dir: Path | None = None


def _rows() -> list[dict]:
    rows = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    return [r | {"id": f"s{k}"} for k, r in enumerate(rows)]


def _samples(rows: list[dict]) -> list[Sample]:
    return [Sample(r["id"], r["fn"], code="def f():\n    return 1\n") for r in rows]


def test_rows_read_back_from_the_out_file(tmp_path: Path) -> None:
    rows = _rows()
    output = RunOutput(_Config(out=tmp_path / "results.jsonl"))  # type: ignore[arg-type]
    samples = _samples(rows)
    output.write(output.todo(samples).todo, iter(rows))
    assert list(output.rows()) == rows
    assert (tmp_path / "results.jsonl").read_text().count("\n") == len(rows)
    assert summarize(output.rows()) == summarize(rows)
    assert [g.id for g in output.grades()] == [r["id"] for r in rows]


def test_rows_on_stdout_are_read_back_from_a_private_spool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = _rows()
    output = RunOutput(_Config())  # type: ignore[arg-type]
    samples = _samples(rows)
    output.write(output.todo(samples).todo, iter(rows))
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed == rows
    assert list(output.rows()) == rows
    spool = output._written
    assert spool is not None and spool.exists()
    output.close()
    output.close()
    assert not spool.exists()


def test_the_stream_holds_no_row(tmp_path: Path) -> None:
    """Rows are produced lazily and written one by one: the writer never lists them."""
    rows = _rows()
    produced: list[int] = []

    def lazily():
        for k, r in enumerate(rows):
            produced.append(k)
            yield r

    output = RunOutput(_Config(out=tmp_path / "r.jsonl"))  # type: ignore[arg-type]
    samples = _samples(rows)
    stream = output.stream(output.todo(samples).todo, lazily())
    first = next(stream)
    assert first == rows[0] and produced == [0]
    assert (tmp_path / "r.jsonl").read_text().count("\n") == 1  # on disk before the next
    assert list(stream) == rows[1:]


def test_sources_are_extracted_on_lookup() -> None:
    samples = [Sample("a", "f", code="x = 1\n"), Sample("b", "f", code="broken")]
    calls: list[str] = []

    def code(s: Sample) -> str | None:
        calls.append(s.id)
        return s.code if s.id == "a" else None

    sources = LazySources(samples, code)
    assert calls == []
    assert sources["a"] == "x = 1\n"
    assert "b" not in sources and "zz" not in sources
    assert sources.get("b") is None
    assert list(sources) == ["a"] and len(sources) == 1


def test_junit_alone_is_written(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gradebox.cli import cli

    examples = Path(__file__).resolve().parents[3] / "examples"
    res = CliRunner().invoke(
        cli,
        [
            "grade",
            "--hidden",
            str(examples / "hidden.jsonl"),
            "--samples",
            str(examples / "samples.jsonl"),
            "--no-judge",
            "--no-static",
            "--junit",
            str(tmp_path / "j.xml"),
            "--out",
            str(tmp_path / "r.jsonl"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "<testsuite" in (tmp_path / "j.xml").read_text()


def test_the_html_report_extracts_only_the_embedded_samples(tmp_path: Path) -> None:
    from gradebox.grade import Grade
    from gradebox.reports.html import render_html

    rows = [r | {"id": f"s{k}"} for k, r in enumerate(_rows() * 20)]
    calls: list[str] = []

    def code(s: Sample) -> str | None:
        calls.append(s.id)
        return s.code

    sources = LazySources(_samples(rows), code)
    render_html((Grade.from_row(r) for r in rows), None, sources=sources, max_samples=5)
    assert len(calls) <= 5  # a lookup per embedded sample, never a pass over all
