"""The routes a patch reaches ``gradebox gate`` by, for the attack suites.

``test_attacks_host.py`` and ``test_attacks_forge.py`` load this file by path
(the test suite imports in ``importlib`` mode: test folders are not packages).

* ``library``: :func:`gradebox.patches.run_gate` with the patch as text;
* ``head``: the attack committed on a branch of the fixture repository and gated
  with ``head=`` its commit (PR head mode); ``head-branch`` and ``head-tag`` name
  that commit by its branch or a tag instead;
* ``cli``: ``gradebox gate --repo R --base B --patch F ...`` through click's
  ``CliRunner``, the row read back from ``--out``.

Every gate through :class:`Gates` also checks that the user's repository kept
its ``.git/config``, ``.git/info/*`` and ``.git/hooks/*`` byte for byte.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from gradebox.cli import cli
from gradebox.patches import GateConfig, GateSpec, TestIds, run_gate

HERE = Path(__file__).parent
Edit = Callable[[Path], None]


def payload(file: str, **fields: str) -> str:
    """The text of ``attacks/<name>.txt``, with ``{field}`` placeholders filled in."""
    text = (HERE / f"{file}.txt").read_text()
    return text.format(**fields) if fields else text


def git(cwd: Path, *args: str) -> str:
    """Run git in the fixture repository (the same environment as ``conftest.git``)."""
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


def git_state(repo: Path) -> dict[str, str]:
    """SHA-256 of the repository's ``.git/config``, ``.git/info/*`` and ``.git/hooks/*``."""
    dot = repo / ".git"
    paths = [dot / "config", *(dot / "info").rglob("*"), *(dot / "hooks").rglob("*")]
    return {
        str(p.relative_to(dot)): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else "dir"
        for p in sorted(paths)
    }


def write(path: str, text: str) -> Edit:
    """An edit that writes ``text`` to ``path`` (parents created)."""

    def do(root: Path) -> None:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)

    return do


def link(path: str, target: str) -> Edit:
    """An edit that makes ``path`` a symbolic link to ``target``."""

    def do(root: Path) -> None:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).symlink_to(target)

    return do


def append(path: str, text: str) -> Edit:
    """An edit that appends ``text`` to the existing ``path``."""

    def do(root: Path) -> None:
        p = root / path
        p.write_text(p.read_text() + text)

    return do


def both(*edits: Edit) -> Edit:
    """The edits, in order."""

    def do(root: Path) -> None:
        for e in edits:
            e(root)

    return do


def rebase(repo: Any, edit: Edit, message: str = "layout") -> Any:
    """Commit ``edit`` on the fixture's ``main`` and return the repository with that base."""
    edit(repo.path)
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", message)
    return dataclasses.replace(repo, base=git(repo.path, "rev-parse", "HEAD").strip())


class Gates:
    """Gate patches against one fixture repository by any route."""

    def __init__(
        self, repo: Any, config: GateConfig, env_cache: Path, tmp: Path, tests: TestIds
    ) -> None:
        """Gates against ``repo`` deciding by ``tests`` unless a gate names others."""
        self.repo, self.config, self.env_cache, self.tmp, self.tests = (
            repo, config, env_cache, tmp, tests,
        )  # fmt: skip

    def __call__(
        self,
        route: str,
        *,
        edit: Edit | None = None,
        text: str | None = None,
        test_patch: str | None = None,
        tests: TestIds | None = None,
        protect: tuple[str, ...] | None = None,
    ) -> dict[str, Any]:
        """The row of one gate (``edit`` for the head routes, else ``text`` or ``edit``).

        ``protect`` (the library route only) replaces the protected globs: ``()`` takes
        protection away, to show what the layers behind it hold on their own.
        """
        assert protect is None or route == "library", route
        ids = tests or self.tests
        if route.startswith("head"):
            assert edit is not None, "the head routes commit an edit of the tree"
            head = self._commit(edit, route)
            before = git_state(self.repo.path)
            spec = GateSpec("g1", self.repo.path, self.repo.base, None, ids, head=head,
                            test_patch=test_patch)  # fmt: skip
            row = run_gate(spec, self.config).to_row()
        else:
            if text is None:
                assert edit is not None
                text = self.repo.patch(edit)
            before = git_state(self.repo.path)
            if route == "library":
                spec = GateSpec("g1", self.repo.path, self.repo.base, text, ids,
                                test_patch=test_patch, protect=protect)  # fmt: skip
                row = run_gate(spec, self.config).to_row()
            else:
                assert route == "cli", route
                row = self._cli(text, ids, test_patch)
        assert git_state(self.repo.path) == before, "the user's .git changed"
        return row

    def _commit(self, edit: Edit, route: str) -> str:
        n = len(list(self.tmp.glob("head-*")))
        (self.tmp / f"head-{n}").touch()
        sha = self.repo.commit(edit, f"attack {n}")
        if route == "head-branch":
            return f"attack-{n}"
        if route == "head-tag":
            git(self.repo.path, "tag", f"v0.{n}", sha)
            return f"v0.{n}"
        assert route == "head", route
        return sha

    def _cli(self, text: str, ids: TestIds, test_patch: str | None) -> dict[str, Any]:
        n = len(list(self.tmp.glob("cli-*.diff")))
        patch, out = self.tmp / f"cli-{n}.diff", self.tmp / f"cli-{n}.jsonl"
        patch.write_text(text)
        p2p = ids.pass_to_pass if isinstance(ids.pass_to_pass, str) else ",".join(ids.pass_to_pass)
        args = [
            "gate", "--repo", str(self.repo.path), "--base", self.repo.base,
            "--patch", str(patch), "--fail-to-pass", ",".join(ids.fail_to_pass),
            "--pass-to-pass", p2p, "--no-static", "--base-runs", "1", "--timeout", "120",
            "--env-cache", str(self.env_cache), "--out", str(out),
        ]  # fmt: skip
        if test_patch is not None:
            (self.tmp / f"cli-{n}.tests.diff").write_text(test_patch)
            args += ["--test-patch", str(self.tmp / f"cli-{n}.tests.diff")]
        res = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert res.exit_code in (0, 1, 2), res.output
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
        assert len(rows) == 1, res.output
        return rows[0]
