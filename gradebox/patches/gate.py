"""Gate one patch: build trees, test in the sandbox, compare with base, scan, decide.

Nothing here checks a revision out or lets a host tool read the patch or the
tree: revisions are read as objects (:mod:`gradebox.patches.tree`), the patch
is applied in memory by :mod:`gradebox.patches.applier`, and every decision is
made on the trees before and after it (:mod:`gradebox.patches.changes`). The
order, and what each step can decide (:func:`run_gate`):

1. base (and, with ``head``, the head revision) read from the repository's
   objects (a broken repository is ``infra_error``);
2. an empty patch is ``empty_patch``; one that does not parse, names a path
   out of the tree, a binary change or a link out of the tree is
   ``patch_refused``; one that does not apply is ``apply_failed``;
3. protection on the trees: changes to protected paths that are more than
   new tests are ``patch_touches_tests`` (or, with ``protect_mode="strip"``,
   put back to base and said so); new tests run separately (step 6);
4. base + hidden test patch + tripwires (:mod:`gradebox.patches.tripwires`),
   its package built and installed when base declares a build system
   (:mod:`gradebox.patches.build`; a failure is the row's ``infra_error``),
   run ``base_runs`` times: tests whose status differs are quarantined. This
   step is kept per base revision, test patch, environment and settings, so the
   next prediction for the same instance does not repeat it;
5. the deciding tree: head with protected paths and every root pytest
   configuration file as at base, the hidden test patch and the same
   tripwires, its package built (a build that fails here, after base built,
   is ``build_failed``); head run plus a separate collection (cross-check);
6. the patch's new tests, in a tree that adds them, run and reported;
7. tamper scan of added lines (links read through); differential static;
   diff size;
8. :func:`gradebox.patches.verdict.decide`; then, with a judge and an intent,
   the judge's annotation (``patch`` rubric), which never changes the verdict.

Nothing here raises for what a patch does: every outcome is a :class:`GateRow`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gradebox.errors import SetupError
from gradebox.patches import tripwires
from gradebox.patches.applier import ApplyFailed, ApplyStrategy, LinkRefused, apply_patch
from gradebox.patches.build import (
    BuildFailed,
    Installed,
    Packaging,
    Wheel,
    packaging_for,
)
from gradebox.patches.changes import binary, tree_changes
from gradebox.patches.diff import FileChange, ParsedPatch, PatchRefused, parse_patch
from gradebox.patches.env import (
    EnvFailed,
    TestEnv,
    default_cache,
    ensure_env,
    given_env,
    lockfile_requirements,
)
from gradebox.patches.model import ApplyReport, GateRow, GateSpec, ProtectMode, TestsPart
from gradebox.patches.protect import DEFAULT_PROTECT, Protection, glob_matches, protection
from gradebox.patches.staticdiff import StaticSettings, diff_size, differential
from gradebox.patches.tamper import TamperHit, scan, shadows
from gradebox.patches.testrun import (
    INI_FILES,
    PytestSetup,
    Status,
    SuiteRun,
    pytest_setup,
    run_suite,
)
from gradebox.patches.tree import (
    Entry,
    GitError,
    ObjectStore,
    PathRefused,
    Tree,
    escaping_links,
    materialize,
    overlay,
    resolved,
)
from gradebox.patches.verdict import categorize, decide, quarantine
from sandbox.command import CommandLimits
from sandbox.errors import IsolationUnavailable
from static.lockfiles import LockfileError, read_lockfile

if TYPE_CHECKING:
    from judge import Judge, JudgeResult

__all__ = ["GateConfig", "run_gate"]

_MAX_FILE_BYTES = 2 * 1024 * 1024
_MAX_INTENT = 20_000
_LOCKFILES = ("requirements.txt",)


@dataclass(frozen=True, slots=True)
class GateConfig:
    """How every gate of a run is done (resolved once at the CLI)."""

    limits: CommandLimits = field(default_factory=lambda: CommandLimits(timeout_s=600))
    """Limits of each sandboxed pytest run."""
    base_runs: int = 3
    """Runs of base for flake quarantine (at least 1)."""
    protect_mode: ProtectMode = "fail"
    """Protected paths fail the gate, or are put back to base and the rest graded."""
    env: Path | None = None
    """A prepared environment (``--env DIR``) instead of the cache."""
    env_cache: Path = field(default_factory=default_cache)
    """Where built environments are kept."""
    python: str = "/usr/bin/python3"
    """The interpreter environments are made from."""
    static: StaticSettings | None = field(default_factory=StaticSettings)
    """The static layers (``None``: off)."""
    install: bool = True
    """Build the package under test with base's build backend and install it for each run
    (:mod:`gradebox.patches.build`); ``False``: the tests import from the tree."""


def run_gate(spec: GateSpec, config: GateConfig, judge: Judge | None = None) -> GateRow:
    """Gate one patch; see the module docstring.

    ``judge``, when given and the spec has an intent, annotates the row with the
    ``patch`` rubric's reading of the candidate's diff (the change between the
    trees, protected files put back) against the intent: never the hidden test
    patch, never a test result, and never the verdict.

    Raises:
        SetupError: The environment cannot be built or the sandbox is unavailable
            (nothing can be graded: the CLI exits 2).
    """
    t0 = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="gradebox-gate-"))
    try:
        scratch.chmod(0o755)
        row = _gate(spec, config, ObjectStore(spec.repo), scratch, judge)
    except GitError as exc:
        row = GateRow(spec.id, "needs_review", "infra_error", infra_error=str(exc))
    except EnvFailed as exc:
        row = GateRow(spec.id, "needs_review", "infra_error", infra_error=f"env: {exc}"[:600])
    except IsolationUnavailable as exc:
        raise SetupError(f"the patch gate needs bubblewrap isolation: {exc}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    timing = {**row.timing, "total_s": round(time.monotonic() - t0, 3)}
    rules = tuple(dict([*spec.rules, *row.rules]).items())
    return replace(row, timing=timing, repo=str(spec.repo), rules=rules)


@dataclass(frozen=True, slots=True)
class _Head:
    """The candidate's tree and how it was made."""

    tree: dict[str, Entry]
    strategy: ApplyStrategy
    changes: tuple[FileChange, ...]


def _candidate(spec: GateSpec, store: ObjectStore, base: str, before: Tree) -> _Head | GateRow:
    """The tree after the candidate's patch, or the row that ends the gate."""
    if spec.head:
        try:
            tree = store.tree(store.commit(spec.head))
        except GitError as exc:
            if "must not be written" in str(exc) or "refused" in str(exc):
                return _refused(spec, base, str(exc))
            raise
        links = escaping_links(tree)
        if links:
            return _refused(spec, base, "symbolic links out of the repository: " + ", ".join(links))
        strategy: ApplyStrategy = "head"
    else:
        text = spec.patch or ""
        if not text.strip():
            return GateRow(spec.id, "fail", "empty_patch", "the patch is empty", base=base)
        try:
            applied = apply_patch(before, parse_patch(text), blob=store.blob)
        except PatchRefused as exc:
            return _refused(spec, base, str(exc))
        except LinkRefused as exc:
            return _refused(spec, base, str(exc))
        except ApplyFailed as exc:
            report = ApplyReport(None, str(exc)[:300] or "the patch does not apply")
            return GateRow(spec.id, "fail", "apply_failed", report.detail, base, report)
        tree, strategy = applied.tree, applied.strategy
    changes = tree_changes(before, tree)
    if not changes:
        return GateRow(spec.id, "fail", "empty_patch", "the patch changes nothing", base=base)
    shown = [c.path for c in changes if binary(tree.get(c.path)) or binary(before.get(c.path))]
    if shown:
        why = f"{shown[0]}: binary change refused (it cannot be reviewed or scanned)"
        return _refused(spec, base, why)
    return _Head(tree, strategy, changes)


def _gate(  # noqa: PLR0915 - the steps of the module docstring, in order
    spec: GateSpec, config: GateConfig, store: ObjectStore, scratch: Path, judge: Judge | None
) -> GateRow:
    base = store.commit(spec.base)
    before = store.tree(base)
    head = _candidate(spec, store, base, before)
    if isinstance(head, GateRow):
        return head
    patterns = spec.protect if spec.protect is not None else DEFAULT_PROTECT
    prot = protection(head.changes, before, head.tree, patterns)
    stripped: tuple[str, ...] = ()
    if prot.touched and config.protect_mode == "fail":
        report = ApplyReport(None, "touches " + ", ".join(prot.touched[:10]), prot.touched,
                             protected_lines=prot.lines, added_tests=prot.added_tests)  # fmt: skip
        detail = "the patch edits protected test paths: " + "; ".join(prot.lines[:10])
        return GateRow(spec.id, "fail", "patch_touches_tests", detail, base, report)
    if prot.touched:
        stripped = prot.touched
        if not set(c.path for c in head.changes) - set(stripped):
            report = ApplyReport(None, None, prot.touched, stripped, protected_lines=prot.lines)
            why = "nothing is left after stripping protected paths"
            return GateRow(spec.id, "fail", "empty_patch", why, base, report)
    hidden = _hidden_patch(spec)
    env = _environment(spec, config, before)
    setup = pytest_setup(before, env)
    config_name = setup.config
    targets = _targets(spec)
    readonly = tuple(dict.fromkeys([*DEFAULT_PROTECT, *patterns]))
    packaging = _packaging(config, before, scratch)
    try:
        base_tree = _with_hidden(before, hidden, store)
    except ApplyFailed:
        err = "the hidden test patch does not apply to base"
        return GateRow(spec.id, "needs_review", "infra_error", base=base, infra_error=err)
    at_base = _at_base(spec, config, base, base_tree, env, targets, readonly, setup, packaging,
                       scratch)  # fmt: skip
    if at_base.problem is not None:
        return GateRow(spec.id, "needs_review", "infra_error", base=base,
                       infra_error=at_base.problem, timing=at_base.timing)  # fmt: skip
    base_runs, plan = list(at_base.runs), at_base.plan
    put_back = {*prot.touched, *prot.added_tests}
    hidden_paths = set(hidden.paths) if hidden is not None else set()
    restored = tuple(sorted(hidden_paths & {c.path for c in head.changes}))
    deciding = overlay(head.tree, before, put_back | hidden_paths | set(INI_FILES))
    try:
        deciding = _with_hidden(deciding, hidden, store)
    except ApplyFailed:
        err = "the hidden test patch does not apply after the candidate's patch"
        return GateRow(spec.id, "needs_review", "infra_error", base=base, infra_error=err)
    test_state: Literal["none", "applied", "failed"] = "none" if hidden is None else "applied"
    report = ApplyReport(head.strategy, None, prot.touched, stripped, restored, test_state,
                         prot.lines, prot.added_tests)  # fmt: skip
    deciding = tripwires.plant(deciding, plan)
    wired = [*targets, plan.path] if plan is not None and targets else targets
    head_dir = _write(deciding, scratch / "head")
    installed: Installed | None = None
    if packaging is not None and at_base.wheel is not None:
        try:
            installed = packaging.build(head_dir, config.limits, scratch / "head-wheel")[1]
        except BuildFailed as exc:
            why = f"the package does not build after the patch: {exc}"
            return GateRow(spec.id, "fail", "build_failed", why, base, report,
                           timing=at_base.timing)  # fmt: skip
    run = run_suite(head_dir, env, _existing(wired, deciding), config.limits, collect=True,
                    readonly=readonly, setup=setup, package=installed)  # fmt: skip
    added_run = _added_run(prot, head.tree, deciding, hidden_paths, scratch, env, config,
                           readonly, setup, installed)  # fmt: skip
    tests = _tests(spec, base_runs, run, plan, added_run, prot)
    view_before, view_after = resolved(before), resolved(overlay(head.tree, before, put_back))
    changes = tree_changes(view_before, view_after)
    texts = _texts(changes, view_before, view_after)
    tamper = _tamper(changes, texts[1], patterns, before, view_after)
    static = None
    if config.static is not None:
        static = differential(
            changes, texts[0], texts[1], pins=_pins(spec, before, env),
            local_modules=_local_modules(view_after), settings=config.static,
        )  # fmt: skip
    verdict, reason, note = decide(tests, static, tamper)
    timing: dict[str, float | str | None] = {
        "env": "given" if env.key == "given" else "built" if env.built_s is not None else "cached",
        "env_s": env.built_s,
        **at_base.timing,
    }
    rules = (("pytest_config", f"base:{base}:{config_name}" if config_name else "none"),
             ("protect", "spec" if spec.protect is not None else "default"),
             ("install", "none" if packaging is None else packaging.describe()))  # fmt: skip
    return GateRow(
        spec.id, verdict, reason, note, base, report, tests, tuple(tamper), static,
        diff_size(changes, texts[0], texts[1]), timing=timing,
        judge=_judge(judge, spec, changes), rules=rules,
    )  # fmt: skip


def _write(tree: Tree, dest: Path) -> Path:
    dest.mkdir()
    dest.chmod(0o755)
    try:
        materialize(tree, dest)
    except PathRefused as exc:
        raise GitError(f"cannot write the tree: {exc}") from exc
    return dest


def _with_hidden(tree: Tree, hidden: ParsedPatch | None, store: ObjectStore) -> dict[str, Entry]:
    if hidden is None:
        return dict(tree)
    return apply_patch(tree, hidden, blob=store.blob).tree


def _added_run(
    prot: Protection,
    head: Tree,
    deciding: Tree,
    hidden_paths: set[str],
    scratch: Path,
    env: TestEnv,
    config: GateConfig,
    readonly: tuple[str, ...],
    setup: PytestSetup,
    installed: Installed | None,
) -> SuiteRun | None:
    files = [p for p in prot.added_tests if p not in hidden_paths]
    if not files:
        return None
    tree = dict(deciding)
    for p in files:
        tree[p] = head[p]
    ids = [i for i in prot.new_test_ids if i.split("::", 1)[0] in files]
    return run_suite(_write(tree, scratch / "added"), env, ids, config.limits, collect=True,
                     readonly=readonly, setup=setup, package=installed)  # fmt: skip


def _judge(
    judge: Judge | None, spec: GateSpec, changes: tuple[FileChange, ...]
) -> JudgeResult | None:
    if judge is None or not spec.intent:
        return None
    from judge import JudgeItem  # noqa: PLC0415 - loads the client only when judging

    item = JudgeItem(
        sample_id=spec.id, fn="patch", spec=spec.intent[:_MAX_INTENT],
        signature=", ".join(c.path for c in changes)[:1000],
        code="".join(c.text for c in changes), rubric_name="patch",
    )  # fmt: skip
    return judge.judge_many([item])[0]


def _refused(spec: GateSpec, base: str, why: str) -> GateRow:
    return GateRow(spec.id, "fail", "patch_refused", why, base, ApplyReport(None, why))


def _environment(spec: GateSpec, config: GateConfig, before: Tree) -> TestEnv:
    if config.env is not None:
        return given_env(config.env)
    name = spec.lockfile or next((n for n in _LOCKFILES if n in before), None)
    entry = before.get(name) if name else None
    if name and (entry is None or entry.is_link):
        raise SetupError(f"{spec.where or spec.id}: lockfile {name!r} is not in the base revision")
    text = entry.data.decode("utf-8", "replace") if entry is not None else None
    return ensure_env(config.env_cache, python=config.python,
                      requirements=lockfile_requirements(name, text))  # fmt: skip


def _hidden_patch(spec: GateSpec) -> ParsedPatch | None:
    if not spec.test_patch or not spec.test_patch.strip():
        return None
    try:
        return parse_patch(spec.test_patch)
    except PatchRefused as exc:
        raise SetupError(f"{spec.where or spec.id}: the test patch: {exc}") from exc


def _targets(spec: GateSpec) -> list[str]:
    if spec.tests.pass_to_pass == "auto":  # noqa: S105 - a keyword, not a password
        return []
    ids = [*spec.tests.fail_to_pass, *spec.tests.pass_to_pass]
    return list(dict.fromkeys(i.split("::", 1)[0] for i in ids))


def _existing(targets: list[str], tree: Tree) -> list[str]:
    return [t for t in targets if t in tree and not tree[t].is_link]


def _base_runs(
    tree: Path,
    env: TestEnv,
    targets: list[str],
    config: GateConfig,
    readonly: tuple[str, ...],
    setup: PytestSetup,
    installed: Installed | None,
) -> tuple[list[SuiteRun], str | None]:
    runs = []
    present = [t for t in targets if (tree / t).is_file() and not (tree / t).is_symlink()]
    for _ in range(max(1, config.base_runs)):
        run = run_suite(tree, env, present, config.limits, collect=False, readonly=readonly,
                        setup=setup, package=installed)  # fmt: skip
        if not run.reliable:
            return [], "the tests cannot be run at base: " + "; ".join(run.problems)
        runs.append(run)
    return runs, None


def _packaging(config: GateConfig, before: Tree, scratch: Path) -> Packaging | None:
    if not config.install:
        return None
    return packaging_for(before, cache=config.env_cache, python=config.python, scratch=scratch)


@dataclass(frozen=True, slots=True)
class _AtBase:
    """What the gate learns at base: its runs, the tripwires that held, its wheel."""

    runs: tuple[SuiteRun, ...]
    plan: tripwires.Plan | None
    wheel: Wheel | None
    problem: str | None
    timing: dict[str, float | str | None]


_BASES: OrderedDict[str, _AtBase] = OrderedDict()
_BASES_KEPT = 16


def _at_base(
    spec: GateSpec,
    config: GateConfig,
    base: str,
    base_tree: dict[str, Entry],
    env: TestEnv,
    targets: list[str],
    readonly: tuple[str, ...],
    setup: PytestSetup,
    packaging: Packaging | None,
    scratch: Path,
) -> _AtBase:
    """Base's runs, once per base revision, test patch, environment and settings.

    Every predictions for one instance shares them: base does not change with the
    patch (the key holds everything the runs depend on), and a run that could not
    be believed is not kept.
    """
    key = _base_key(spec, config, base, env, targets, readonly, setup, packaging)
    hit = _BASES.get(key)
    if hit is not None:
        _BASES.move_to_end(key)
        return replace(hit, timing={**hit.timing, "base": "cached"})
    t0 = time.monotonic()
    plan = tripwires.plan(base_tree, spec.tests.fail_to_pass, targets)
    wired = [*targets, plan.path] if plan is not None and targets else targets
    base_dir = _write(tripwires.plant(base_tree, plan), scratch / "base")
    wheel, installed = None, None
    if packaging is not None:
        try:
            wheel, installed = packaging.build(base_dir, config.limits, scratch / "base-wheel")
        except BuildFailed as exc:
            why = f"env: the package does not build at base ({packaging.system.origin}): {exc}"
            return _AtBase((), None, None, why, {"base": "run"})
    runs, problem = _base_runs(base_dir, env, wired, config, readonly, setup, installed)
    if plan is not None and not all(tripwires.held(plan, r.statuses) for r in runs):
        plan = None  # the tripwires were not collected or ran otherwise at base: none at head
    timing: dict[str, float | str | None] = {
        "base": "run",
        "base_s": round(time.monotonic() - t0, 3),
    }
    found = _AtBase(tuple(runs), plan, wheel, problem, timing)
    if problem is None:
        _BASES[key] = found
        while len(_BASES) > _BASES_KEPT:
            _BASES.popitem(last=False)
    return found


def _base_key(
    spec: GateSpec,
    config: GateConfig,
    base: str,
    env: TestEnv,
    targets: list[str],
    readonly: tuple[str, ...],
    setup: PytestSetup,
    packaging: Packaging | None,
) -> str:
    parts = [
        str(spec.repo.resolve()), base, spec.test_patch or "", json.dumps(targets),
        json.dumps(list(spec.tests.fail_to_pass)), str(env.path), env.key, repr(config.limits),
        str(config.base_runs), json.dumps(list(readonly)), repr(setup),
        "none" if packaging is None else f"{packaging.describe()}\0{packaging.env.key}",
    ]  # fmt: skip
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _tests(
    spec: GateSpec,
    base_runs: list[SuiteRun],
    head: SuiteRun,
    plan: tripwires.Plan | None,
    added_run: SuiteRun | None,
    prot: Protection,
) -> TestsPart:
    planted = set() if plan is None else set(plan.ids)
    runs = [tripwires.without(r.statuses, planted) for r in base_runs]
    head_statuses = tripwires.without(head.statuses, planted)
    stable, flaky = quarantine(runs)
    first = runs[0]

    def base_of(i: str) -> Status | None:
        return stable.get(i, first.get(i))

    everything = sorted(set(first) | set(stable) | set(head_statuses))
    by_cat: dict[str, list[str]] = {}
    for i in everything:
        by_cat.setdefault(categorize(base_of(i), head_statuses.get(i)), []).append(i)
    added_statuses = {} if added_run is None else dict(added_run.statuses)
    added = {
        i: categorize(base_of(i), s)
        for i, s in sorted(added_statuses.items())
        if any(i == p or i.startswith(p + "::") or i.startswith(p + "[") for p in prot.new_test_ids)
    }
    f2p = {}
    for i in spec.tests.fail_to_pass:
        got = head_statuses.get(i)
        if got is None and i in added_statuses:
            got = added_statuses[i]
        f2p[i] = categorize(base_of(i), got)
    given = spec.tests.pass_to_pass
    auto = not isinstance(given, tuple)
    p2p_ids = (
        [i for i, s in stable.items() if s == "passed" and i not in f2p] if auto else list(given)
    )
    p2p = {i: categorize(base_of(i), head_statuses.get(i)) for i in p2p_ids if i not in set(flaky)}
    problems = list(head.problems)
    if added_run is not None:
        problems += [f"new tests: {p}" for p in added_run.problems]
    wires: Literal["ok", "tripped", "unavailable"] = "unavailable"
    if plan is not None:
        wires = "ok" if tripwires.held(plan, head.statuses) else "tripped"
    collected = None if head.collected is None else head.collected - len(planted & head.listed)
    return TestsPart(
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        by_category={k: tuple(v) for k, v in sorted(by_cat.items())},  # type: ignore[misc]
        quarantined=flaky,
        base_runs=len(base_runs),
        head_problems=tuple(problems[:5]),
        head_timed_out=head.timed_out or (added_run is not None and added_run.timed_out),
        head_exit_code=head.exit_code,
        collected=collected,
        pass_to_pass_auto=auto,
        added=added,
        tripwires=wires,
    )


def _texts(
    changes: tuple[FileChange, ...], before: Tree, after: Tree
) -> tuple[dict[str, str | None], dict[str, str]]:
    old: dict[str, str | None] = {}
    new: dict[str, str] = {}
    for c in changes:
        b, a = before.get(c.path), after.get(c.path)
        old[c.path] = None if b is None or b.is_link else b.data.decode("utf-8", "replace")
        if a is not None and not a.is_link and len(a.data) <= _MAX_FILE_BYTES:
            new[c.path] = a.data.decode("utf-8", "replace")
    return old, new


def _tamper(
    changes: tuple[FileChange, ...],
    head_texts: dict[str, str],
    protected: tuple[str, ...],
    before: Tree,
    after: Tree,
) -> list[TamperHit]:
    """Scan added lines of every Python file but the tests' own (links read through)."""
    hits: list[TamperHit] = []
    for c in changes:
        ours = any(glob_matches(p, c.path) for p in protected if "#" not in p)
        if c.path.endswith(".py") and c.path in head_texts and not ours:
            hits += scan(c.path, head_texts[c.path], c.added_lines)
    for top in sorted(_new_modules(before, after)):
        hit = shadows(top)
        hits += [hit] if hit is not None else []
    return hits


def _new_modules(before: Tree, after: Tree) -> set[str]:
    """Top-level module names (root or ``src/``) importable at head and not at base."""

    def modules(tree: Tree) -> set[str]:
        out = set()
        for path, entry in tree.items():
            parts = path.split("/")
            parts = parts[1:] if parts[0] == "src" and len(parts) > 1 else parts
            if len(parts) == 1 and (parts[0].endswith(".py") or entry.is_link):
                out.add(parts[0].removesuffix(".py"))
            elif len(parts) == 2 and parts[1] == "__init__.py":
                out.add(parts[0])
        return out

    return modules(after) - modules(before)


def _pins(spec: GateSpec, before: Tree, env: TestEnv) -> dict[str, str] | None:
    """What the tests may import: the base lockfile's pins, else what the environment holds."""
    name = spec.lockfile or next((n for n in _LOCKFILES if n in before), None)
    pins = {}
    for info in env.path.glob("lib/python*/site-packages/*.dist-info"):
        dist, _, version = info.name[: -len(".dist-info")].partition("-")
        pins[dist.lower().replace("_", "-")] = version
    entry = before.get(name) if name else None
    if entry is None or name is None:
        return pins
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d) / Path(name).name
        tmp.write_bytes(entry.data)
        try:
            return read_lockfile(tmp)
        except LockfileError:
            return pins


def _local_modules(tree: Mapping[str, Entry]) -> set[str]:
    out = set()
    for path in tree:
        parts = path.split("/")
        if parts[0] == "src" and len(parts) > 1:
            parts = parts[1:]
        if len(parts) == 1 and parts[0].endswith(".py"):
            out.add(parts[0][:-3])
        elif len(parts) > 1 and parts[-1].endswith(".py"):
            out.add(parts[0])
    return out
