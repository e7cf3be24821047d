"""The sandbox fails closed: when isolation is missing or leaky, nothing runs."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gradebox.cli import cli
from sandbox import backends
from sandbox.backends import BwrapBackend, find_python
from sandbox.errors import IsolationUnavailable
from sandbox.runner import Sandbox, open_sandbox
from sandbox.types import Limits


class _Leaky(BwrapBackend):
    """bwrap with one hole punched in it, to prove the self-check notices."""

    def __init__(self, extra: list[str]) -> None:
        super().__init__()
        self.extra = extra

    def launch(self, python, limits):
        launch = super().launch(python, limits)
        if self.extra[0] == "drop":  # remove options (each with its arguments)
            for opt, n, *value in self.extra[1:]:
                where = [
                    k
                    for k, a in enumerate(launch.argv)
                    if a == opt and (not value or launch.argv[k + 1] == value[0])
                ]
                del launch.argv[where[-1] : where[-1] + n]
        else:
            i = launch.argv.index("--chdir")
            launch.argv[i:i] = self.extra
        return launch


@pytest.mark.parametrize(
    ("hole", "message"),
    [
        (["--share-net"], "loopback network is reachable"),
        (["--setenv", "OPENAI_API_KEY", "sk-test"], "environment not scrubbed"),
        (["drop", ("--remount-ro", 2, "/")], "host paths are writable"),
        (["drop", ("--disable-userns", 1), ("--seccomp", 2)], "nested user namespaces"),
        (["--setenv", "HARMLESS_CONTROL", "1"], "environment not scrubbed"),
        (["drop", ("--seccomp", 2)], "no seccomp filter is installed"),
        (["drop", ("--as-pid-1", 1)], "refused to start: not_pid_1"),
        (["drop", ("--remount-ro", 2, "/dev")], "/dev is writable"),
    ],
    ids=[
        "network",
        "env",
        "writable-root",
        "nested-userns",
        "any-env",
        "no-seccomp",
        "bwrap-init",
        "writable-dev",
    ],
)
def test_self_check_refuses_a_leaky_sandbox(hole, message):
    sb = Sandbox(_Leaky(hole), find_python(), Limits(), 1)
    try:
        with pytest.raises(IsolationUnavailable, match=message):
            sb.self_check()
    finally:
        sb.close()


def test_open_sandbox_refuses_a_leaky_pool_before_it_returns(monkeypatch):
    # The self-check runs on the first worker up while the others still start: a pool
    # of several must still be refused as a whole, before any candidate can run.
    class LeakyNet(_Leaky):
        def __init__(self) -> None:
            super().__init__(["--share-net"])

    monkeypatch.setitem(backends.BACKENDS, "bwrap", LeakyNet)
    with pytest.raises(IsolationUnavailable, match="loopback network is reachable"):
        open_sandbox("bwrap", workers=3)


def test_the_real_backend_passes_its_self_check():
    with open_sandbox("bwrap") as sb:
        sb.self_check()
        assert sb.backend == "bwrap" and sb.isolated


def test_missing_bwrap_is_refused_with_a_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(IsolationUnavailable, match=r"apt-get install -y bubblewrap"):
        open_sandbox("bwrap")


def test_auto_never_falls_back_to_none(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(IsolationUnavailable):
        open_sandbox("auto")


def test_cli_refuses_with_exit_2_and_writes_nothing(monkeypatch, tmp_path):
    (tmp_path / "h.jsonl").write_text('{"fn": "inc", "args": [1], "expect": 2}\n')
    (tmp_path / "s.jsonl").write_text(
        '{"id": "a", "fn": "inc", "code": "def inc(x): return x+1"}\n'
    )
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    res = CliRunner().invoke(
        cli,
        [
            "grade",
            "--hidden",
            str(tmp_path / "h.jsonl"),
            "--samples",
            str(tmp_path / "s.jsonl"),
            "--out",
            str(tmp_path / "o.jsonl"),
        ],
    )
    assert res.exit_code == 2
    assert "bwrap is not installed" in res.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_unknown_isolation_and_bad_interpreter_are_refused(tmp_path):
    with pytest.raises(IsolationUnavailable, match="unknown isolation"):
        open_sandbox("docker")
    with pytest.raises(IsolationUnavailable, match=r"no Python 3\.11"):
        open_sandbox("bwrap", python=str(tmp_path / "nope"))
