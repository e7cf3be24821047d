"""The records of ``gradebox mine``: what one commit became, and the instance it yields.

:meth:`Instance.to_row` is the one place an ``instances.jsonl`` row is written
(SWE-bench's instance format, read back by ``gradebox gate --swebench``);
:meth:`Outcome.to_json` is the one place a commit's entry of the report is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from gradebox.grade import Json
from sandbox.command import CommandLimits

__all__ = [
    "DROP_REASONS",
    "Commit",
    "DropReason",
    "Dropped",
    "EnvSetup",
    "GateCheck",
    "Instance",
    "MineConfig",
    "Outcome",
    "Validation",
]

DropReason = Literal[
    "root_commit",
    "no_tests",
    "no_source",
    "too_big",
    "does_not_apply",
    "env_build_failed",
    "tests_unreliable",
    "no_f2p",
    "flaky",
    "gold_does_not_resolve",
    "validation_disagrees",
]
"""Why a commit yields no instance, in the order the checks run:

* ``root_commit``: it has no parent to be the base (or, in a shallow clone, not here);
* ``no_tests``: it changes no test file (nothing the gate protects);
* ``no_source``: it changes no Python file outside the tests;
* ``too_big``: the patch or the test patch is beyond the size bound;
* ``does_not_apply``: its change cannot be written as a patch gradebox reads back to the
  same trees (a binary file, a path gradebox refuses, bytes a unified diff cannot carry);
* ``env_build_failed``: the test environment of its base cannot be built;
* ``tests_unreliable``: the tests at the commit (or at base) cannot be believed: a time
  limit, a crash, a JUnit XML that contradicts the exit code or the collection;
* ``no_f2p``: no test fails at base (with the test patch) and passes at the commit;
* ``flaky``: the only tests that would be FAIL_TO_PASS changed status between runs;
* ``gold_does_not_resolve``: a test passing at base fails at the commit, or (``--validate``)
  the gate does not find the commit's own patch resolved;
* ``validation_disagrees``: (``--validate``) the gate finds the no-op or the reversed patch
  resolved."""
DROP_REASONS: tuple[DropReason, ...] = get_args(DropReason)


@dataclass(frozen=True, slots=True)
class Dropped:
    """Why a step ends a commit."""

    reason: DropReason
    """The reason."""
    detail: str | None = None
    """More on it (a path, a problem of the run, the tests concerned)."""
    flaky: tuple[str, ...] = ()
    """Tests whose status differed between runs, when the tests ran."""


@dataclass(frozen=True, slots=True)
class MineConfig:
    """One mining run, resolved once at the CLI."""

    repo: Path
    """The repository (read as git objects only; never written)."""
    repo_name: str
    """``owner/name``: the instances' ``repo`` (the gate finds the clone at
    ``DIR/owner__name``)."""
    rev_range: str | None = None
    """``A..B``, ``A..`` or ``B`` (``None``: every commit reachable from ``HEAD``)."""
    max_instances: int = 100
    """Stop once this many instances are kept."""
    runs: int = 2
    """Runs of the tests at base and at the commit (a status that differs is flaky)."""
    validate: bool = False
    """Gate the gold, no-op and reversed patches; keep only what the gate agrees with."""
    max_lines: int = 500
    """Most changed lines of the patch, and of the test patch."""
    max_files: int = 20
    """Most files the patch (the non-test part) changes."""
    limits: CommandLimits = field(default_factory=lambda: CommandLimits(timeout_s=600))
    """Limits of each sandboxed pytest run."""
    env: Path | None = None
    """A prepared environment for every commit (``--env DIR``) instead of the cache."""
    env_cache: Path = Path("envs")
    """Where built environments are kept (the gate's cache)."""
    python: str = "/usr/bin/python3"
    """The interpreter environments are made from."""
    install: bool = True
    """Build and install the package under test as the gate does (``--no-install``: the
    tests import from the tree)."""


@dataclass(frozen=True, slots=True)
class Commit:
    """A commit as read from its object."""

    sha: str
    """Its full id."""
    parents: tuple[str, ...]
    """Its parents' ids."""
    created_at: str | None
    """The author date in UTC (``2024-01-31T12:00:00Z``); ``None`` when unreadable."""
    message: str
    """The commit message (decoded, cut at 64 KiB)."""

    @property
    def subject(self) -> str:
        """The message's first line (cut at 72 characters)."""
        return (self.message.strip().splitlines() or [""])[0][:72]


@dataclass(frozen=True, slots=True)
class EnvSetup:
    """How an instance's test environment was built (its ``environment_setup``)."""

    lockfile: str | None
    """The lockfile read at base (``requirements.txt``); ``None``: pytest only; ``given``
    environments say ``None`` too."""
    lockfile_sha256: str | None
    """The lockfile's bytes at base, hashed."""
    python: str | None
    """The environment's Python version (``3.11.2``)."""
    key: str
    """The environment's cache key (``given`` for ``--env DIR``)."""
    packages: dict[str, str]
    """What the environment holds: distribution -> version."""
    build: str | None = None
    """How the package under test was built and installed for each run (base's build
    system: ``pyproject.toml: hatchling.build [hatchling, hatch-vcs, wheel]``); ``None``:
    the tests import from the tree."""

    def to_json(self) -> dict[str, Json]:
        """The instance's ``environment_setup`` object."""
        return {
            "builder": "gradebox",
            "lockfile": self.lockfile,
            "lockfile_sha256": self.lockfile_sha256,
            "python": self.python,
            "env_key": self.key,
            "packages": dict(self.packages),
            "build": self.build,
        }


@dataclass(frozen=True, slots=True)
class Instance:
    """One task: a commit's own fix and the tests that show it."""

    instance_id: str
    """``owner__name-<12 hex of the commit>``."""
    repo: str
    """``owner/name``."""
    base_commit: str
    """The commit's parent."""
    commit: str
    """The commit the task was mined from (its fix is :attr:`patch`)."""
    patch: str
    """The gold patch: the commit's change outside the tests."""
    test_patch: str
    """The commit's change to the tests (and their configuration)."""
    fail_to_pass: tuple[str, ...]
    """Tests failing at base + test patch in every run, passing at the commit in every run."""
    pass_to_pass: tuple[str, ...]
    """Tests passing at both in every run."""
    problem_statement: str
    """The commit message."""
    created_at: str | None
    """The commit's author date."""
    environment: EnvSetup
    """How the test environment was built."""

    def to_row(self) -> dict[str, Json]:
        """The ``instances.jsonl`` row (SWE-bench's keys; test ids as JSON lists)."""
        return {
            "instance_id": self.instance_id,
            "repo": self.repo,
            "base_commit": self.base_commit,
            "patch": self.patch,
            "test_patch": self.test_patch,
            "FAIL_TO_PASS": list(self.fail_to_pass),
            "PASS_TO_PASS": list(self.pass_to_pass),
            "problem_statement": self.problem_statement,
            "hints_text": "",
            "created_at": self.created_at,
            "environment_setup_commit": self.base_commit,
            "environment_setup": self.environment.to_json(),
            "commit": self.commit,
        }


PatchKind = Literal["gold", "noop", "empty", "reversed"]
"""What was gated: the commit's patch, a change that does nothing (a comment appended to a
file the gold patch changes; ``empty`` when there is none to append to), or the gold patch
taken back on top of the commit."""


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One validation gate."""

    patch: PatchKind
    """Which patch."""
    verdict: str
    """The gate's verdict."""
    reason: str
    """The gate's reason."""
    resolved: bool
    """SWE-bench's resolved, as the gate decides it."""
    seconds: float
    """How long the gate took."""

    def to_json(self) -> dict[str, Json]:
        """This check in the report."""
        return {"patch": self.patch, "verdict": self.verdict, "reason": self.reason,
                "resolved": self.resolved, "seconds": self.seconds}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Validation:
    """The three gates of ``--validate``."""

    gold: GateCheck
    """The commit's own patch: must be resolved."""
    noop: GateCheck
    """A patch that changes nothing the tests see: must not be."""
    reversed: GateCheck
    """The gold patch reversed on top of the commit: must not be."""

    @property
    def agrees(self) -> bool:
        """The gate says what the mined tests say."""
        return self.gold.resolved and not self.noop.resolved and not self.reversed.resolved

    def to_json(self) -> dict[str, Json]:
        """The commit's ``validation`` object in the report."""
        return {
            "agrees": self.agrees,
            "gold": self.gold.to_json(),
            "noop": self.noop.to_json(),
            "reversed": self.reversed.to_json(),
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one commit became."""

    commit: Commit
    """The commit."""
    reason: DropReason | None
    """Why it was dropped (``None``: kept)."""
    detail: str | None = None
    """More on the reason (a path, a problem of the run)."""
    instance: Instance | None = None
    """The instance (also for a commit dropped at validation, for the record)."""
    flaky: tuple[str, ...] = ()
    """Tests whose status differed between runs (left out)."""
    validation: Validation | None = None
    """The gates of ``--validate`` (``None``: not run)."""
    mine_s: float = 0.0
    """Seconds spent reading, splitting and running the tests."""
    validate_s: float = 0.0
    """Seconds spent in the validation gates."""

    @property
    def kept(self) -> bool:
        """The commit yields an instance."""
        return self.reason is None

    def to_json(self) -> dict[str, Json]:
        """The commit's entry in the report."""
        inst = self.instance
        return {
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "kept": self.kept,
            "reason": self.reason,
            "detail": None if self.detail is None else self.detail[:500],
            "instance_id": None if inst is None else inst.instance_id,
            "fail_to_pass": None if inst is None else len(inst.fail_to_pass),
            "pass_to_pass": None if inst is None else len(inst.pass_to_pass),
            "flaky": list(self.flaky),
            "validation": None if self.validation is None else self.validation.to_json(),
            "mine_s": self.mine_s,
            "validate_s": self.validate_s,
        }
