"""Files that can hold what a run learned of hidden cases are the owner's only (0600).

``--out``, the run directory's files and the reports say which hidden cases each
sample failed (and with ``--explain`` the cases themselves). Written under the
usual umask 022, each must still be 0600; one that existed with 0644 is narrowed
before anything is written.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.cli import cli
from gradebox.runs.private import private_binary, private_dir, private_text

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_file_a_grade_run_writes_is_the_owners_only(tmp_path, umask_022, monkeypatch):
    for name in ("GRADEBOX_JUDGE_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "results.jsonl"
    out.write_text("")
    out.chmod(0o644)  # an old results file, world-readable
    run = tmp_path / "runs" / "r1"
    res = CliRunner().invoke(cli, [
        "grade", "--hidden", str(EXAMPLES / "hidden.jsonl"),
        "--public", str(EXAMPLES / "public.jsonl"), "--samples", str(EXAMPLES / "samples.jsonl"),
        "--no-judge", "--explain", "--out", str(out),
        "--html", str(tmp_path / "report.html"), "--junit", str(tmp_path / "junit.xml"),
        "--sarif", str(tmp_path / "run.sarif"), "--run-dir", str(run),
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    written = [out, tmp_path / "report.html", tmp_path / "junit.xml", tmp_path / "run.sarif",
               *sorted(p for p in run.rglob("*") if p.is_file())]  # fmt: skip
    assert len(written) > 5 and (run / "results.jsonl") in written
    assert {str(p.relative_to(tmp_path)): _mode(p) for p in written} == {
        str(p.relative_to(tmp_path)): 0o600 for p in written
    }
    assert _mode(run) == 0o700
    assert _mode(tmp_path / "runs") == 0o755  # only the leaf gradebox made is narrowed


def test_a_directory_that_exists_keeps_its_mode_and_a_pipe_is_written_as_is(tmp_path, umask_022):
    keep = tmp_path / "mine"
    keep.mkdir(mode=0o755)
    private_dir(keep)
    assert _mode(keep) == 0o755
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o644)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with private_text(fifo) as fh:
            fh.write("row\n")
        assert os.read(reader, 10) == b"row\n"
    finally:
        os.close(reader)
    assert _mode(fifo) == 0o644
    with private_binary(tmp_path / "b.xml") as fh:
        fh.write(b"<x/>")
    assert _mode(tmp_path / "b.xml") == 0o600
