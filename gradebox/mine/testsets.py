"""FAIL_TO_PASS and PASS_TO_PASS, found by running a commit's tests in the sandbox.

The tests run as the gate runs them (:func:`gradebox.patches.testrun.run_suite`:
a fresh bubblewrap sandbox per run, the tree an in-memory copy with its tests
read-only, pytest started by gradebox with the base revision's ini file and the
environment's plugins), ``runs`` times in each of two trees:

* **base**: the parent with the test patch (:attr:`Split.base_tree`);
* **head**: the commit as the gate's deciding run sees it (:attr:`Split.head_tree`).

What runs: the test modules the test patch changes, or the whole suite when it
changes anything else of the tests (a ``conftest.py``, a package's
``__init__.py``, a helper or data file, an ini file): those reach any test.

Every run must be believable (:attr:`SuiteRun.reliable`), as the gate requires.
A test whose status differs between the runs of one tree is flaky and left
out. FAIL_TO_PASS: failed (or absent: a module that does not import) in every
base run, passed in every head run. PASS_TO_PASS: passed in every run of both.
A test that passes at base and fails at the commit is a regression the gate
would hold against the gold patch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gradebox.mine.model import Dropped
from gradebox.mine.split import Split
from gradebox.patches.build import BuildFailed, Installed, Packaging
from gradebox.patches.env import TestEnv
from gradebox.patches.protect import DEFAULT_PROTECT, is_test_module
from gradebox.patches.testrun import PytestSetup, Status, run_suite
from gradebox.patches.tree import PathRefused, Tree, materialize
from gradebox.patches.verdict import quarantine
from sandbox.command import CommandLimits

__all__ = ["Found", "find_tests", "targets"]

_SHOWN = 3


@dataclass(frozen=True, slots=True)
class Found:
    """The deciding tests of one commit."""

    fail_to_pass: tuple[str, ...]
    """Failed (or absent) in every base run, passed in every head run."""
    pass_to_pass: tuple[str, ...]
    """Passed in every run of both trees."""
    flaky: tuple[str, ...]
    """Changed status between the runs of a tree."""


def targets(split: Split) -> list[str]:
    """The test modules the test patch changes; ``[]`` (the whole suite) if it changes more."""
    modules = [p for p in split.test_paths if is_test_module(p) and p in split.head_tree]
    shared = [p for p in split.test_paths if not is_test_module(p) and not p.startswith(".github/")]
    return [] if shared or not modules else modules


def find_tests(
    split: Split,
    env: TestEnv,
    setup: PytestSetup,
    *,
    runs: int,
    limits: CommandLimits,
    scratch: Path,
    packaging: Packaging | None = None,
) -> Found | Dropped:
    """Run base and head ``runs`` times each; the tests found, or why there are none.

    With ``packaging``, each tree's package is built in the sandbox and installed
    for its runs, as the gate does; a tree that does not build is
    ``env_build_failed``.
    """
    try:
        base_dir = _write(split.base_tree, scratch / "base")
        head_dir = _write(split.head_tree, scratch / "head")
    except PathRefused as exc:
        return Dropped("does_not_apply", f"cannot write the tree: {exc}")
    installed: dict[Path, Installed | None] = {base_dir: None, head_dir: None}
    if packaging is not None:
        for where, tree in (("base", base_dir), ("the commit", head_dir)):
            try:
                installed[tree] = packaging.build(tree, limits, scratch / f"{tree.name}-wheel")[1]
            except BuildFailed as exc:
                return Dropped("env_build_failed", f"the package does not build at {where}: {exc}")
    wanted = targets(split)
    base: list[dict[str, Status]] = []
    head: list[dict[str, Status]] = []
    head_exit: int | None = None
    for n in range(max(1, runs)):
        for where, tree, out, collect in (("base", base_dir, base, False),
                                          ("the commit", head_dir, head, n == 0)):  # fmt: skip
            run = run_suite(tree, env, wanted, limits, collect=collect, readonly=DEFAULT_PROTECT,
                            setup=setup, package=installed[tree])  # fmt: skip
            if not run.reliable:
                return Dropped("tests_unreliable", f"at {where}: " + "; ".join(run.problems))
            out.append(dict(run.statuses))
            head_exit = run.exit_code if out is head else head_exit
    found = _decide(base, head)
    if isinstance(found, Dropped) and found.reason == "no_f2p":
        return Dropped("no_f2p", f"{found.detail} ({_at_head(head[-1], head_exit)})", found.flaky)
    return found


def _at_head(statuses: Mapping[str, Status], exit_code: int | None) -> str:
    """What the commit's own tests did: counts, and a failed collection said so."""
    counts = {s: sum(v == s for v in statuses.values()) for s in ("passed", "failed", "skipped")}
    said = "at the commit: " + ", ".join(f"{n} {s}" for s, n in counts.items())
    if exit_code == 2:
        said += "; a test module does not import there (on this Python?)"
    return said


def _decide(
    base: Sequence[Mapping[str, Status]], head: Sequence[Mapping[str, Status]]
) -> Found | Dropped:
    stable_base, flaky_base = quarantine(base)
    stable_head, flaky_head = quarantine(head)
    flaky = tuple(sorted({*flaky_base, *flaky_head}))
    passing = [i for i, s in stable_head.items() if s == "passed" and i not in flaky]
    f2p = tuple(sorted(i for i in passing if stable_base.get(i, "failed") == "failed"))
    p2p = tuple(sorted(i for i in passing if stable_base.get(i) == "passed"))
    regressed = sorted(i for i, s in stable_head.items()
                       if s == "failed" and stable_base.get(i) == "passed")  # fmt: skip
    if regressed:
        why = "passes at base, fails at the commit: " + _listed(regressed)
        return Dropped("gold_does_not_resolve", why, flaky)
    if not f2p:
        maybe = [i for i in flaky if any(r.get(i) == "passed" for r in head)]
        if maybe:
            return Dropped("flaky", "only flaky tests would fail to pass: " + _listed(maybe), flaky)
        return Dropped("no_f2p", "no test fails at base and passes at the commit", flaky)
    return Found(f2p, p2p, flaky)


def _listed(ids: Sequence[str]) -> str:
    more = len(ids) - _SHOWN
    return ", ".join(ids[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


def _write(tree: Tree, dest: Path) -> Path:
    dest.mkdir()
    dest.chmod(0o755)
    materialize(tree, dest)
    return dest
