"""The gate's own helpers that mining reuses, imported in this one place.

Mining must read repositories and start pytest exactly as the gate does, or
the tests it finds would not be the tests the gate runs: git under the gate's
fixed configuration (:mod:`gradebox.patches.tree`), pytest with the base
revision's root ini file and the environment's plugins, the root ini files a
deciding tree holds as at base (:mod:`gradebox.patches.gate`). These are
private there; while they stay so, this module is the only importer.
"""

from __future__ import annotations

from pathlib import Path

from gradebox.patches.env import TestEnv
from gradebox.patches.gate import _INI_ORDER, _plugins, _pytest_config
from gradebox.patches.testrun import PytestSetup
from gradebox.patches.tree import Tree, _git

__all__ = ["INI_FILES", "git", "pytest_setup"]

INI_FILES: tuple[str, ...] = _INI_ORDER
"""pytest's root configuration files: a deciding tree holds them as at base."""


def git(args: list[str], git_dir: Path, *, stdin: bytes | None = None) -> bytes:
    """Run read-only git plumbing under the gate's fixed configuration.

    Raises:
        GitError: git failed.
    """
    return _git(args, git_dir, stdin=stdin)


def pytest_setup(base: Tree, env: TestEnv) -> PytestSetup:
    """How the gate starts pytest for this base tree and environment."""
    return PytestSetup(_pytest_config(base), _plugins(env))
