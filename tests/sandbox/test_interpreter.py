"""The interpreter that runs candidates: taken without a probe when it is the system's.

A run's start-up used to start the interpreter once just to ask its version and
prefix (~20 ms). The system's interpreter (under ``/usr``, which every sandbox
mounts) is now taken as it is and its first worker says its version; anything
else, or an interpreter on which no worker starts, is probed as before.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import sandbox.runner
from sandbox.backends import supported_version, system_python
from sandbox.errors import IsolationUnavailable
from sandbox.runner import open_sandbox
from sandbox.types import make_case


@pytest.fixture(params=["bwrap", "none"])
def isolation(request: pytest.FixtureRequest) -> str:
    if request.param == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    return str(request.param)


def _no_probe(explicit: str | None = None) -> object:
    raise AssertionError(f"the interpreter was probed ({explicit})")


def test_the_system_interpreter_starts_workers_without_a_probe(
    isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if system_python() is None:
        pytest.skip("no /usr/bin/python3 here")
    monkeypatch.setattr(sandbox.runner, "locate_python", _no_probe)
    with open_sandbox(isolation, workers=1) as sb:
        assert supported_version(sb.python_version)
        res = sb.run("def add(a, b):\n    return a + b\n", "add", [make_case("add", 2, 3)])
        assert res.observations[0].value == 5


def test_an_interpreter_no_worker_starts_on_is_probed_and_refused(isolation: str) -> None:
    # /usr/bin/true lies under /usr and is executable, so it is taken without a probe;
    # no worker starts on it, and the probe then says why (as it did before).
    if system_python("/usr/bin/true") is None:
        pytest.skip("no /usr/bin/true here")
    with pytest.raises(IsolationUnavailable, match=r"no Python 3\.11\+ interpreter found"):
        open_sandbox(isolation, workers=1, python="/usr/bin/true")


def test_only_interpreters_under_usr_are_taken_without_a_probe(tmp_path: Path) -> None:
    assert system_python("/nonexistent/python3") is None
    outside = tmp_path / "python3"
    outside.write_text("#!/bin/sh\n")
    outside.chmod(0o755)
    assert system_python(str(outside)) is None  # its prefix is unknown: probed
    link = tmp_path / "link"
    link.symlink_to("/usr/bin/true")
    taken = system_python(str(link))
    assert taken is not None and taken.path == os.path.realpath("/usr/bin/true")


@pytest.mark.parametrize(
    ("version", "ok"),
    [
        ("3.11.2 (main, Mar 13 2023, 12:18:29) [GCC 12.2.0]", True),
        ("3.13.0rc1 (main)", True),
        ("3.10.12 (main)", False),
        ("2.7.18", False),
        ("?", False),
        ("", False),
        (None, False),
    ],
)
def test_supported_version_reads_a_workers_sys_version(version: str | None, ok: bool) -> None:
    assert supported_version(version) is ok
