"""``gradebox advisories``: a snapshot is replaced only by one that indexes; no network keeps it."""

from __future__ import annotations

import json
import shutil
import socket

import pytest
from advisory_data import SNAPSHOT
from click.testing import CliRunner

from gradebox.cli.advisories import advisories

JINJA = SNAPSHOT / "vulns" / "jinja2" / "PYSEC-2014-8.yaml"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_update_copies_a_snapshot_and_no_network_keeps_it(tmp_path):
    if not JINJA.is_file():
        pytest.skip(f"the PyPA advisory snapshot is not at {SNAPSHOT}")
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(JINJA, src / "PYSEC-2014-8.yaml")
    dest, cache = tmp_path / "kept", tmp_path / "cache"
    runner = CliRunner()
    args = ["update", "--to", str(dest), "--cache-dir", str(cache), "--json"]
    done = runner.invoke(advisories, [*args, "--from", str(src)])
    assert done.exit_code == 0, done.output
    first = json.loads(done.output)
    assert (first["records"], first["skipped"]) == (1, 0)
    url = f"http://127.0.0.1:{_closed_port()}/PyPI/all.zip"
    offline = runner.invoke(advisories, [*args, "--from", url])
    assert offline.exit_code == 2
    assert "no network" in offline.output and f"kept {dest}" in offline.output
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = runner.invoke(advisories, [*args, "--from", str(empty)])
    assert refused.exit_code == 2 and "no advisory records" in refused.output
    shown = runner.invoke(advisories, ["info", str(dest), "--cache-dir", str(cache), "--json"])
    assert json.loads(shown.output)["digest"] == first["digest"]  # the old one, untouched
