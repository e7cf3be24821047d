"""Small repositories with real git history, one commit per way a commit can end in mining.

``make_history`` builds ``proj`` (a package ``calc`` and its tests, pytest
only) and commits on top of it, each a real ``git commit`` of real edits. Every
repository is named ``proj`` (in its own temporary folder), so the test
environment (keyed by the repository's name and lockfile) is built once per
session and shared.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gradebox.mine import MineConfig
from sandbox.command import CommandLimits

OPS = '''"""Small arithmetic helpers."""


def add(a, b):
    return a + b


def mean(xs):
    return sum(xs) / (len(xs) + 1)
'''

TESTS = """from calc.ops import add


def test_add():
    assert add(2, 3) == 5
"""

BUNDLE = Path(__file__).resolve().parents[4] / "shared" / "data" / "repos" / "cachetools.bundle"


def git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_AUTHOR_DATE": "2024-01-31T12:00:00+01:00",
        "GIT_COMMITTER_DATE": "2024-01-31T12:00:00+01:00",
    }  # fmt: skip
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


class History:
    """A repository being written commit by commit."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.shas: dict[str, str] = {}

    def git(self, *args: str) -> str:
        """Run git in the repository (a test's own, trusted)."""
        return git(self.root, *args)

    def hash(self) -> str:
        """A digest of the repository's ``.git``."""
        return git_hash(self.root)

    def fix_mean(self) -> str:
        """Commit the real fix of ``mean`` with its test."""
        return fix_mean(self)

    def commit(self, name: str, files: dict[str, str | bytes | None], message: str = "") -> str:
        """Write ``files`` (``None`` deletes), commit as ``name``; return the sha."""
        for rel, data in files.items():
            path = self.root / rel
            if data is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, bytes):
                path.write_bytes(data)
            else:
                path.write_text(data)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-qm", message or name)
        sha = git(self.root, "rev-parse", "HEAD").strip()
        self.shas[name] = sha
        return sha


def make_history(parent: Path) -> History:
    """``proj`` with its first (root) commit: ``calc/ops.py`` (``mean`` is wrong) and tests."""
    root = parent / "proj"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    h = History(root)
    h.commit(
        "root",
        {"calc/__init__.py": "", "calc/ops.py": OPS, "tests/__init__.py": "",
         "tests/test_ops.py": TESTS},
    )  # fmt: skip
    return h


def fix_mean(h: History) -> str:
    """The real fix of ``mean`` with its test: the commit mining keeps."""
    ops = (h.root / "calc" / "ops.py").read_text().replace("(len(xs) + 1)", "len(xs)")
    test = (h.root / "tests" / "test_ops.py").read_text() + (
        "\n\ndef test_mean():\n    from calc.ops import mean\n\n    assert mean([1, 2, 3]) == 2\n"
    )
    return h.commit(
        "fix", {"calc/ops.py": ops, "tests/test_ops.py": test},
        "Fix mean(): divide by the count\n\nmean([1, 2, 3]) was 1.5.",
    )  # fmt: skip


def git_hash(repo: Path) -> str:
    """A digest of every file under ``repo/.git`` (names, modes and bytes)."""
    digest = hashlib.sha256()
    git_dir = repo / ".git"
    for path in sorted(git_dir.rglob("*")):
        rel = str(path.relative_to(git_dir)).encode()
        digest.update(rel + b"\0" + oct(path.lstat().st_mode).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="session")
def env_cache() -> Iterator[Path]:
    # Directly under /tmp: the sandbox's uid must be able to read the environment.
    d = Path(tempfile.mkdtemp(prefix="gbx-mine-envs-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def history(tmp_path: Path) -> History:
    return make_history(tmp_path)


@pytest.fixture
def new_history(tmp_path: Path) -> Callable[[str], History]:
    """``new_history(name)``: another ``proj`` repository, in ``tmp_path/name``."""
    return lambda name: make_history(tmp_path / name)


@pytest.fixture
def bundle() -> Path:
    if not BUNDLE.is_file():
        pytest.skip(f"the cachetools bundle is not at {BUNDLE}")
    return BUNDLE


@pytest.fixture
def mine_config(env_cache: Path) -> Callable[..., MineConfig]:
    """``mine_config(repo, **overrides)``: a fast configuration (2 runs, 120 s limit)."""

    def make(repo: Path, **kw: object) -> MineConfig:
        base: dict[str, object] = {
            "repo": repo, "repo_name": "acme/proj", "runs": 2,
            "limits": CommandLimits(timeout_s=120), "env_cache": env_cache,
        }  # fmt: skip
        base.update(kw)
        return MineConfig(**base)  # type: ignore[arg-type]

    return make


@pytest.fixture
def history_hash() -> Callable[[Path], str]:
    """``history_hash(repo)``: a digest of every file of ``repo/.git``."""
    return git_hash
