"""The pre-commit hook on a real git repository: staged changes gated against HEAD."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pre_commit.clientlib import load_manifest

from ..patches.conftest import fix_mean, git, make_repo

ROOT = Path(__file__).resolve().parents[3]
F2P = ["--fail-to-pass", "tests/test_ops.py::test_mean"]


def _hook(repo: Path, env_cache: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo.parent)}
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gradebox.github.precommit", "--env-cache", str(env_cache), *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return proc, time.monotonic() - t0


def test_the_manifest_is_valid_for_pre_commit():
    (hook,) = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    assert hook["id"] == "gradebox-gate" and hook["language"] == "python"
    assert hook["entry"] == "python -m gradebox.github.precommit"
    assert hook["pass_filenames"] is False


def test_staged_changes_are_gated_against_head(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    fix_mean(repo.path)
    git(repo.path, "add", "calc/ops.py")
    (repo.path / "calc" / "ops.py").write_text("this unstaged edit plays no part\n")
    proc, _ = _hook(repo.path, env_cache, "--no-static", *F2P)  # builds or warms the env cache
    assert proc.returncode == 0, proc.stderr
    proc, took = _hook(repo.path, env_cache, "--no-static", *F2P)
    assert proc.returncode == 0, proc.stderr
    print(f"\npre-commit gate, tests only, cached env: {took:.2f} s")
    proc, took = _hook(repo.path, env_cache, *F2P)
    assert proc.returncode == 0, proc.stderr
    print(f"pre-commit gate, tests and static, cached env: {took:.2f} s")


def test_a_staged_regression_fails_the_commit_and_says_why(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    ops = repo.path / "calc" / "ops.py"
    ops.write_text(ops.read_text().replace("return a + b", "return a - b"))
    git(repo.path, "add", "-A")
    proc, _ = _hook(repo.path, env_cache, "--no-static")
    assert proc.returncode == 1, proc.stderr
    assert "**fail**" in proc.stdout and "test_add" in proc.stdout


NEW_TEST_FILE = """from calc.ops import mean


def test_mean_of_one():
    assert mean([4]) == 4
"""
NEW_TEST_FUNCTION = """

def test_mean_of_two():
    assert mean([1, 2]) == 1.5
"""


def _add_test_file(root: Path) -> None:
    (root / "tests" / "test_mean.py").write_text(NEW_TEST_FILE)


def _add_test_function(root: Path) -> None:
    tests = root / "tests" / "test_ops.py"
    tests.write_text(tests.read_text() + NEW_TEST_FUNCTION)


@pytest.mark.parametrize("add_test", [_add_test_file, _add_test_function], ids=["file", "function"])
def test_a_staged_fix_with_its_own_new_test_passes(tmp_path, env_cache, add_test):
    repo = make_repo(tmp_path / "calc")
    git(repo.path, "config", "diff.noprefix", "true")  # the user's diff settings play no part
    fix_mean(repo.path)
    add_test(repo.path)
    git(repo.path, "add", "-A")
    proc, _ = _hook(repo.path, env_cache, "--no-static", *F2P)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_nothing_staged_passes_at_once(tmp_path):
    repo = make_repo(tmp_path / "calc")
    untouched = tmp_path / "envs"  # a gate would build or lock an environment in it
    proc, _ = _hook(repo.path, untouched)
    assert proc.returncode == 0, proc.stderr
    assert not untouched.exists(), "a gate ran although nothing was staged"
