"""A fixture repository built with real git: a small package, its tests, a real bug.

``calc/ops.py`` has a bug in ``mean`` (it divides by ``len + 1``), so
``tests/test_ops.py::test_mean`` fails at base; ``test_add`` and ``test_scale``
pass. ``calc/ops.py`` also holds an old bandit HIGH finding (``hashlib.md5``,
B324) that no patch here touches. ``requirements.txt`` is the lockfile (pytest
only). Patches are written as real ``git diff`` output of edits made on a
branch, so they are what a code assistant would send.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gradebox.patches import GateConfig, GateSpec, TestIds
from gradebox.patches.staticdiff import StaticSettings
from sandbox.command import CommandLimits
from static.config import StaticConfig

OPS = '''"""Small arithmetic helpers."""

import hashlib


def add(a, b):
    return a + b


def scale(xs, k):
    return [x * k for x in xs]


def mean(xs):
    return sum(xs) / (len(xs) + 1)


def digest(data):
    return hashlib.md5(data).hexdigest()
'''

TESTS = """from calc.ops import add, mean, scale


def test_add():
    assert add(2, 3) == 5


def test_scale():
    assert scale([1, 2], 3) == [3, 6]


def test_mean():
    assert mean([1, 2, 3]) == 2
"""

F2P = ("tests/test_ops.py::test_mean",)
P2P = ("tests/test_ops.py::test_add", "tests/test_ops.py::test_scale")


def git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    }  # fmt: skip
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@dataclass
class Repo:
    """The fixture repository and a way to make patches against its base."""

    path: Path
    base: str

    def patch(self, edit: Callable[[Path], None]) -> str:
        """The ``git diff`` of ``edit`` applied to a clean base tree."""
        edit(self.path)
        git(self.path, "add", "-A")
        diff = git(self.path, "diff", "--cached", "--no-color", self.base)
        git(self.path, "reset", "-q", "--hard", self.base)
        git(self.path, "clean", "-qfdx")
        return diff

    def commit(self, edit: Callable[[Path], None], message: str) -> str:
        """Commit ``edit`` on a branch and return its sha (base stays checked out)."""
        git(self.path, "checkout", "-q", "-b", message.replace(" ", "-"))
        edit(self.path)
        git(self.path, "add", "-A")
        git(self.path, "commit", "-qm", message)
        sha = git(self.path, "rev-parse", "HEAD").strip()
        git(self.path, "checkout", "-q", "main")
        return sha


FLAKY = """import random


def test_coin():
    assert random.random() < 0.5
"""


def make_repo(root: Path, extra: dict[str, str] | None = None) -> Repo:
    root.mkdir(parents=True)
    (root / "calc").mkdir()
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "ops.py").write_text(OPS)
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_ops.py").write_text(TESTS)
    (root / "requirements.txt").write_text("pytest\n")
    for rel, text in (extra or {}).items():
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return Repo(root, git(root, "rev-parse", "HEAD").strip())


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "calc-repo")


@pytest.fixture
def repo_with() -> Callable[..., Repo]:
    """``repo_with(root, {path: text})``: the fixture repository with extra or replaced files."""
    return make_repo


@pytest.fixture
def swe_repo(tmp_path: Path) -> Repo:
    """The repository as SWE-bench's clones dir holds it: ``clones/acme__calc``."""
    return make_repo(tmp_path / "clones" / "acme__calc")


@pytest.fixture
def flaky_repo(tmp_path: Path) -> Repo:
    """The repository with a test that fails half of the time."""
    return make_repo(tmp_path / "flaky-repo", {"tests/test_flaky.py": FLAKY})


@pytest.fixture(scope="session")
def env_cache() -> Iterator[Path]:
    # Directly under /tmp: the sandbox's uid must be able to read the environment.
    d = Path(tempfile.mkdtemp(prefix="gbx-envs-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def mypy_cache() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="gbx-mypy-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def config(env_cache: Path) -> GateConfig:
    """One base run, no static layers: the fast configuration."""
    return GateConfig(
        limits=CommandLimits(timeout_s=120), base_runs=1, env_cache=env_cache, static=None
    )


@pytest.fixture
def static_config(env_cache: Path, mypy_cache: Path) -> GateConfig:
    settings = StaticSettings(config=StaticConfig(cache_dir=mypy_cache))
    return GateConfig(
        limits=CommandLimits(timeout_s=120), base_runs=1, env_cache=env_cache, static=settings
    )


def make_spec(repo: Repo, patch: str | None, *, id: str = "g1", **kw: object) -> GateSpec:
    tests = kw.pop("tests", TestIds(F2P, P2P))
    return GateSpec(id, repo.path, repo.base, patch, tests, **kw)  # type: ignore[arg-type]


def fix_mean(root: Path) -> None:
    ops = root / "calc" / "ops.py"
    ops.write_text(ops.read_text().replace("(len(xs) + 1)", "len(xs)"))


@pytest.fixture
def spec() -> Callable[..., GateSpec]:
    """``spec(repo, patch, id=..., tests=..., ...)``: a GateSpec for the fixture repository."""
    return make_spec


@pytest.fixture
def fix() -> Callable[[Path], None]:
    """The real fix of ``mean``, as an edit of a tree."""
    return fix_mean
