"""Mine a repository's history: each commit in a range becomes an instance or a reason.

Per non-merge commit, newest first, until ``max_instances`` are kept, in this
order (each step can end it with a :data:`~gradebox.mine.model.DropReason`):

1. its parent is the base (a root commit has none);
2. the changed paths, from the two trees' listings (no blob read): a test file
   and a Python file outside the tests must both change;
3. the trees, read as objects; the change split into the gold patch and the
   test patch, within the size bound, read back through gradebox's own parser
   and applier to the same trees (:mod:`gradebox.mine.split`);
4. the test environment, as the gate builds it for that base (the base's
   ``requirements.txt``, else pytest only; wheels only; the gate's cache), or
   the one given; a failure is remembered per lockfile;
5. the tests, run in the sandbox at base + test patch and at the commit
   (:mod:`gradebox.mine.testsets`);
6. with ``validate``, the gate on the gold, no-op and reversed patches
   (:mod:`gradebox.mine.validate`).

Nothing here prints: :meth:`Miner.run` yields one :class:`Outcome` per commit.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from gradebox.errors import BadInput, SetupError
from gradebox.mine.history import Listing, changed_paths, commits_in_range, listing, read_commits
from gradebox.mine.model import (
    Commit,
    Dropped,
    DropReason,
    EnvSetup,
    GateCheck,
    Instance,
    MineConfig,
    Outcome,
)
from gradebox.mine.split import Split, noop_patch, prefilter, reverse_patch, split_commit
from gradebox.mine.testsets import Found, find_tests
from gradebox.mine.validate import validate
from gradebox.patches.build import Packaging, packaging_for
from gradebox.patches.env import EnvFailed, TestEnv, ensure_env, given_env, lockfile_requirements
from gradebox.patches.testrun import pytest_setup
from gradebox.patches.tree import Entry, GitError, ObjectStore, Tree
from sandbox.errors import IsolationUnavailable

__all__ = ["Miner"]

_LOCKFILE = "requirements.txt"
_CACHED = 4
_V = TypeVar("_V")


class Miner:
    """Mines one repository (see the module docstring)."""

    def __init__(self, config: MineConfig) -> None:
        """Open the repository (objects only).

        Raises:
            BadInput: ``config.repo`` is not a git repository.
            SetupError: ``config.env`` is not a virtual environment.
        """
        try:
            self._store = ObjectStore(config.repo)
        except GitError as exc:
            raise BadInput([f"--repo {config.repo}: {exc}"]) from exc
        self.config = config
        self._given = None if config.env is None else given_env(config.env)
        self._trees: OrderedDict[str, dict[str, Entry]] = OrderedDict()
        self._listings: OrderedDict[str, Listing] = OrderedDict()
        self._env_failures: dict[str, str] = {}

    def commits(self) -> list[str]:
        """The non-merge commits of the configured range, newest first.

        Raises:
            BadInput: The range is wrong.
        """
        return commits_in_range(self._store, self.config.rev_range)

    def run(self, shas: Iterable[str]) -> Iterator[Outcome]:
        """One outcome per commit, until ``max_instances`` are kept.

        Raises:
            SetupError: The sandbox is unavailable, or the repository cannot be read.
        """
        kept = 0
        for sha in shas:
            if kept >= self.config.max_instances:
                return
            try:
                commit = read_commits(self._store, [sha])[sha]
            except GitError as exc:
                raise SetupError(f"cannot read the repository: {exc}") from exc
            outcome = self.one(commit)
            kept += outcome.kept
            yield outcome

    def one(self, commit: Commit) -> Outcome:
        """What ``commit`` becomes.

        Raises:
            SetupError: The sandbox is unavailable, or the repository cannot be read.
        """
        t0 = time.monotonic()
        scratch = Path(tempfile.mkdtemp(prefix="gradebox-mine-"))
        try:
            scratch.chmod(0o755)
            outcome = self._mine(commit, scratch)
        except IsolationUnavailable as exc:
            raise SetupError(f"mining runs the tests in bubblewrap isolation: {exc}") from exc
        except GitError as exc:
            if "must not be written" not in str(exc) and "refused" not in str(exc):
                raise SetupError(f"cannot read the repository: {exc}") from exc
            outcome = Outcome(commit, "does_not_apply", str(exc))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        mine_s = round(time.monotonic() - t0 - outcome.validate_s, 3)
        return Outcome(commit, outcome.reason, outcome.detail, outcome.instance, outcome.flaky,
                       outcome.validation, mine_s, outcome.validate_s)  # fmt: skip

    def _mine(self, commit: Commit, scratch: Path) -> Outcome:
        if not commit.parents:
            return Outcome(commit, "root_commit", "a root commit has no base")
        base = commit.parents[0]
        try:
            base_listing = self._listing(base)
        except GitError:
            return Outcome(commit, "root_commit", "its parent is not here (a shallow clone?)")
        paths = changed_paths(base_listing, self._listing(commit.sha))
        early = prefilter(paths)
        if early is not None:
            return Outcome(commit, early, None)
        before, after = self._tree(base), self._tree(commit.sha)
        split = split_commit(before, after, max_lines=self.config.max_lines,
                             max_files=self.config.max_files)  # fmt: skip
        if isinstance(split, Dropped):
            return Outcome(commit, split.reason, split.detail)
        env = self._environment(before)
        if isinstance(env, str):
            return Outcome(commit, "env_build_failed", env)
        packaging = self._packaging(before, scratch)
        if isinstance(packaging, str):
            return Outcome(commit, "env_build_failed", packaging)
        if packaging is not None:
            env = (env[0], replace(env[1], build=packaging.describe()))
        found = find_tests(split, env[0], pytest_setup(before, env[0]), runs=self.config.runs,
                           limits=self.config.limits, scratch=scratch,
                           packaging=packaging)  # fmt: skip
        if isinstance(found, Dropped):
            return Outcome(commit, found.reason, found.detail, flaky=found.flaky)
        instance = self._instance(commit, base, split, found, env[1])
        if not self.config.validate:
            return Outcome(commit, None, None, instance, found.flaky)
        t0 = time.monotonic()
        checks = validate(self.config, instance, noop_patch(before, split),
                          reverse_patch(before, after, split))  # fmt: skip
        spent = round(time.monotonic() - t0, 3)
        reason: DropReason | None = None
        if not checks.gold.resolved:
            reason = "gold_does_not_resolve"
        elif not checks.agrees:
            reason = "validation_disagrees"
        detail = None if reason is None else _said(checks.gold, checks.noop, checks.reversed)
        return Outcome(commit, reason, detail, instance, found.flaky, checks, 0.0, spent)

    def _instance(
        self, commit: Commit, base: str, split: Split, found: Found, env: EnvSetup
    ) -> Instance:
        owner_name = self.config.repo_name.replace("/", "__")
        return Instance(
            instance_id=f"{owner_name}-{commit.sha[:12]}", repo=self.config.repo_name,
            base_commit=base, commit=commit.sha, patch=split.patch, test_patch=split.test_patch,
            fail_to_pass=found.fail_to_pass, pass_to_pass=found.pass_to_pass,
            problem_statement=commit.message, created_at=commit.created_at, environment=env,
        )  # fmt: skip

    def _environment(self, before: Tree) -> tuple[TestEnv, EnvSetup] | str:
        """The base's test environment and how it was built, or why it cannot be."""
        if self._given is not None:
            env = self._given
            return env, EnvSetup(None, None, _python(env), env.key, _packages(env))
        entry = before.get(_LOCKFILE)
        if entry is not None and entry.is_link:
            return f"{_LOCKFILE} is a symbolic link at base (the gate refuses it)"
        text = None if entry is None else entry.data.decode("utf-8", "replace")
        name = None if entry is None else _LOCKFILE
        digest = None if entry is None else hashlib.sha256(entry.data).hexdigest()
        failed = self._env_failures.get(digest or "")
        if failed is not None:
            return failed
        try:
            env = ensure_env(self.config.env_cache, python=self.config.python,
                             requirements=lockfile_requirements(name, text))  # fmt: skip
        except SetupError as exc:
            self._env_failures[digest or ""] = str(exc)
            return str(exc)
        return env, EnvSetup(name, digest, _python(env), env.key, _packages(env))

    def _packaging(self, before: Tree, scratch: Path) -> Packaging | str | None:
        """Base's build system and its environment, or why it cannot be built."""
        if not self.config.install:
            return None
        try:
            return packaging_for(before, cache=self.config.env_cache, python=self.config.python,
                                 scratch=scratch)  # fmt: skip
        except EnvFailed as exc:
            return f"the package's build environment: {exc}"

    def _listing(self, sha: str) -> Listing:
        return _cached(self._listings, sha, lambda: listing(self._store, sha))

    def _tree(self, sha: str) -> dict[str, Entry]:
        return _cached(self._trees, sha, lambda: self._store.tree(sha))


def _cached(cache: OrderedDict[str, _V], key: str, make: Callable[[], _V]) -> _V:
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = make()
    cache[key] = value
    while len(cache) > _CACHED:
        cache.popitem(last=False)
    return value


def _said(*checks: GateCheck) -> str:
    return "; ".join(f"{c.patch}: {c.verdict} ({c.reason}), resolved={c.resolved}" for c in checks)


def _python(env: TestEnv) -> str | None:
    """The environment's Python version, from its ``pyvenv.cfg``."""
    try:
        text = (env.path / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            return value.strip()
    return None


def _packages(env: TestEnv) -> dict[str, str]:
    out = {}
    for info in sorted(env.path.glob("lib/python*/site-packages/*.dist-info")):
        dist, _, version = info.name[: -len(".dist-info")].partition("-")
        out[dist.lower().replace("_", "-")] = version
    return out
