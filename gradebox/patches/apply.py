"""A clean work tree of the base revision, and the apply ladder.

:class:`Worktree` is a private clone of the user's repository (``git clone
--shared --no-checkout``: objects are borrowed, nothing is written to the
source) checked out at ``base``. Git runs with hooks, fsmonitor and the
user's global configuration switched off.

The ladder (SWE-bench's): ``git apply --check`` then ``git apply``; else
``git apply --3way``; else ``patch --batch --fuzz=5 -p1``. The first that
succeeds is the strategy recorded on the row; between attempts the tree is
reset to ``base``. After applying, every symbolic link in the tree must stay
inside it (:func:`escaping_links`): ``patch`` and git differ in what they
follow, so the tree is checked, not the tools trusted.

:func:`export` copies the tree without ``.git`` for a sandbox run: each run gets
its own copy, so nothing one run writes reaches another.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["ApplyStrategy", "GitError", "Worktree", "escaping_links", "export"]

ApplyStrategy = Literal["git_apply", "3way", "patch_fuzz"]
"""Which rung of the ladder applied the patch."""

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "LANG": "C",
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": tempfile.gettempdir(),
}
_GIT_SAFE = [
    "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "safe.directory=*",
]  # fmt: skip


class GitError(RuntimeError):
    """git failed on the repository itself (a broken checkout): an infrastructure error."""


@dataclass(frozen=True, slots=True)
class _Run:
    code: int
    out: str
    err: str


def git(args: list[str], cwd: Path, *, stdin: str | None = None, timeout: float = 300) -> _Run:
    """Run git with the safe options; never raises for a non-zero exit."""
    try:
        proc = subprocess.run(
            ["git", *_GIT_SAFE, *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            env=_GIT_ENV,
            timeout=timeout,
            check=False,
            errors="replace",
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]}: {exc}") from exc
    return _Run(proc.returncode, proc.stdout, proc.stderr)


class Worktree:
    """A private checkout of ``base``; see the module docstring. Use as a context manager."""

    def __init__(self, repo: Path, base: str) -> None:
        """Clone ``repo`` and check out ``base``.

        Raises:
            GitError: ``repo`` is not a git repository or ``base`` is not a commit in it.
        """
        self.base = base
        repo = repo.resolve()
        self._tmp = Path(tempfile.mkdtemp(prefix="gradebox-gate-"))
        self.path = self._tmp / "tree"
        try:
            res = git(["clone", "--quiet", "--shared", "--no-checkout", str(repo), str(self.path)],
                      self._tmp)  # fmt: skip
            if res.code:
                raise GitError(f"cannot clone {repo}: {res.err.strip()[:300]}")
            res = git(["rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"], self.path)
            if res.code:
                raise GitError(f"{base!r} is not a commit of {repo}")
            self.commit = res.out.strip()
            res = git(["checkout", "--quiet", "--detach", self.commit], self.path)
            if res.code:
                raise GitError(f"cannot check out {base}: {res.err.strip()[:300]}")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Worktree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Delete the checkout."""
        shutil.rmtree(self._tmp, ignore_errors=True)

    def reset(self) -> None:
        """Back to a clean ``base``."""
        for args in (["reset", "--quiet", "--hard", self.commit], ["clean", "-q", "-fdx"]):
            res = git(args, self.path)
            if res.code:
                raise GitError(f"cannot reset the work tree: {res.err.strip()[:300]}")

    def show(self, rev: str, path: str) -> str | None:
        """A file's text at ``rev`` (``None`` when it does not exist there)."""
        res = git(["show", f"{rev}:{path}"], self.path)
        return res.out if res.code == 0 else None

    def diff(self, rev: str, head: str) -> str:
        """``git diff rev head`` (for ``--head``)."""
        res = git(["diff", "--no-color", "--no-ext-diff", "--full-index", rev, head], self.path)
        if res.code:
            raise GitError(f"cannot diff {rev}..{head}: {res.err.strip()[:300]}")
        return res.out

    def apply(self, patch: str) -> tuple[ApplyStrategy | None, str]:
        """Apply ``patch`` by the ladder; return the strategy (``None``: it did not apply).

        The second value is the last tool's complaint, cut short.
        """
        with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as fh:
            fh.write(patch)
        try:
            return self._ladder(fh.name)
        finally:
            os.unlink(fh.name)

    def _ladder(self, patch_file: str) -> tuple[ApplyStrategy | None, str]:
        plain = ["apply", "--whitespace=nowarn", "-p1"]
        if git([*plain, "--check", patch_file], self.path).code == 0:
            res = git([*plain, patch_file], self.path)
            if res.code == 0:
                return "git_apply", ""
            self.reset()
        res = git([*plain, "--3way", patch_file], self.path)
        if res.code == 0:
            return "3way", ""
        self.reset()
        why = res.err.strip()
        try:
            proc = subprocess.run(
                ["patch", "--batch", "--fuzz=5", "-p1", "--forward", "--no-backup-if-mismatch",
                 "-r", "-", "-i", patch_file],
                cwd=self.path, capture_output=True, text=True, timeout=300, check=False,
                errors="replace",
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.reset()
            return None, f"patch: {exc}"[:300]
        if proc.returncode == 0:
            return "patch_fuzz", ""
        self.reset()
        return None, (why or proc.stdout.strip())[:300]

    def restore(self, paths: list[str]) -> None:
        """Put ``paths`` back as they are at base (deleting those that do not exist there)."""
        for path in paths:
            target = self.path / path
            if self.show(self.commit, path) is None:
                if target.is_file() or target.is_symlink():
                    target.unlink()
                continue
            res = git(["checkout", self.commit, "--", path], self.path)
            if res.code:
                raise GitError(f"cannot restore {path}: {res.err.strip()[:300]}")


def escaping_links(tree: Path) -> list[str]:
    """Symbolic links under ``tree`` (``.git`` aside) that resolve outside it."""
    root = tree.resolve()
    bad = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if not (dirpath == str(tree) and d == ".git")]
        for name in (*dirnames, *filenames):
            p = Path(dirpath) / name
            if p.is_symlink():
                target = Path(os.path.realpath(p))
                if target != root and root not in target.parents:
                    bad.append(str(p.relative_to(tree)))
    return sorted(bad)


def export(tree: Path, dest: Path) -> None:
    """Copy ``tree`` to ``dest`` without ``.git`` (links copied as links)."""
    shutil.copytree(tree, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
