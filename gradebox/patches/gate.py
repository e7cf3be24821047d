"""Gate one patch: apply, test in the sandbox, compare with base, scan, decide.

The order, and what each step can decide (:func:`run_gate`):

1. a private checkout of ``base`` (a broken one is ``infra_error``);
2. an empty patch is ``empty_patch``; one that does not parse, or has a path
   out of the repository, a binary hunk or a link out of it, is
   ``patch_refused``; one touching protected paths is ``patch_touches_tests``
   (or, with ``protect_mode="strip"``, those files are dropped and said so);
3. base + hidden test patch, run ``base_runs`` times: tests whose status
   differs are quarantined;
4. the apply ladder (``apply_failed`` when no rung applies); links out of the
   tree refused; test files the candidate touched restored from base; the
   hidden test patch applied after;
5. head run plus a separate collection (cross-check), per-test categories;
6. tamper scan of added lines; differential static; diff size;
7. :func:`gradebox.patches.verdict.decide`; then, with a judge and an intent,
   the judge's annotation (``patch`` rubric), which never changes the verdict.

Nothing here raises for what a patch does: every outcome is a :class:`GateRow`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gradebox.errors import SetupError
from gradebox.patches.apply import GitError, Worktree, escaping_links
from gradebox.patches.diff import ParsedPatch, PatchRefused, parse_patch, without
from gradebox.patches.env import TestEnv, default_cache, ensure_env, given_env
from gradebox.patches.model import ApplyReport, GateRow, GateSpec, ProtectMode, TestsPart
from gradebox.patches.protect import DEFAULT_PROTECT, glob_matches, protected_paths
from gradebox.patches.staticdiff import StaticSettings, diff_size, differential
from gradebox.patches.tamper import TamperHit, scan, shadows
from gradebox.patches.testrun import Status, SuiteRun, run_suite
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
    """Protected paths fail the gate, or are stripped from the patch."""
    env: Path | None = None
    """A prepared environment (``--env DIR``) instead of the cache."""
    env_cache: Path = field(default_factory=default_cache)
    """Where built environments are kept."""
    python: str = "/usr/bin/python3"
    """The interpreter environments are made from."""
    static: StaticSettings | None = field(default_factory=StaticSettings)
    """The static layers (``None``: off)."""


def run_gate(spec: GateSpec, config: GateConfig, judge: Judge | None = None) -> GateRow:
    """Gate one patch; see the module docstring.

    ``judge``, when given and the spec has an intent, annotates the row with the
    ``patch`` rubric's reading of the candidate's diff (as applied, protected
    files stripped) against the intent: never the hidden test patch, never a
    test result, and never the verdict.

    Raises:
        SetupError: The environment cannot be built or the sandbox is unavailable
            (nothing can be graded: the CLI exits 2).
    """
    t0 = time.monotonic()
    try:
        with Worktree(spec.repo, spec.base) as wt:
            row = _gate(spec, config, wt, judge)
    except GitError as exc:
        row = GateRow(spec.id, "needs_review", "infra_error", infra_error=str(exc))
    except IsolationUnavailable as exc:
        raise SetupError(f"the patch gate needs bubblewrap isolation: {exc}") from exc
    timing = {**row.timing, "total_s": round(time.monotonic() - t0, 3)}
    return replace(row, timing=timing, repo=str(spec.repo))


def _gate(spec: GateSpec, config: GateConfig, wt: Worktree, judge: Judge | None) -> GateRow:
    base = wt.commit
    text = wt.diff(base, spec.head) if spec.head else (spec.patch or "")
    if not text.strip():
        return GateRow(spec.id, "fail", "empty_patch", "the patch is empty", base=base)
    try:
        parsed = parse_patch(text)
    except PatchRefused as exc:
        return _refused(spec, base, str(exc))
    patterns = spec.protect if spec.protect is not None else DEFAULT_PROTECT
    touched = protected_paths(parsed, patterns, lambda p: wt.show(base, p))
    stripped: tuple[str, ...] = ()
    if touched and config.protect_mode == "fail":
        report = ApplyReport(None, "touches " + ", ".join(touched[:10]), protected=touched)
        detail = "the patch edits protected test paths: " + ", ".join(touched[:10])
        return GateRow(spec.id, "fail", "patch_touches_tests", detail, base, report)
    if touched:
        parsed, stripped = without(parsed, set(touched)), touched
        if not parsed.files:
            report = ApplyReport(None, None, touched, stripped)
            why = "nothing is left after stripping protected paths"
            return GateRow(spec.id, "fail", "empty_patch", why, base, report)
    env = _environment(spec, config, wt)
    hidden = _hidden_patch(spec)
    targets = _targets(spec)
    readonly = tuple(dict.fromkeys([*DEFAULT_PROTECT, *patterns]))
    base_runs, problem = _base_runs(wt, hidden, env, targets, config, readonly)
    if problem is not None:
        return GateRow(spec.id, "needs_review", "infra_error", base=base, infra_error=problem)
    strategy, why = wt.apply(parsed.text)
    if strategy is None:
        report = ApplyReport(None, why or "the patch does not apply", touched, stripped)
        return GateRow(spec.id, "fail", "apply_failed", report.detail, base, report)
    links = escaping_links(wt.path)
    if links:
        return _refused(spec, base, "symbolic links out of the repository: " + ", ".join(links))
    texts = _texts(parsed, wt, base)
    restored = _restore_tests(wt, parsed, hidden)
    test_state: Literal["none", "applied", "failed"] = "none"
    if hidden is not None:
        if wt.apply(hidden.text)[0] is None:
            err = "the hidden test patch does not apply after the candidate's patch"
            return GateRow(spec.id, "needs_review", "infra_error", base=base, infra_error=err)
        test_state = "applied"
    report = ApplyReport(strategy, None, touched, stripped, restored, test_state)
    head = run_suite(wt.path, env, _existing(targets, wt.path), config.limits, collect=True,
                     readonly=readonly)  # fmt: skip
    tests = _tests(spec, base_runs, head)
    tamper = _tamper(parsed, texts[1], patterns)
    static = None
    if config.static is not None:
        static = differential(
            parsed.files, texts[0], texts[1], pins=_pins(spec, wt, base, env),
            local_modules=_local_modules(wt.path), settings=config.static,
        )  # fmt: skip
    verdict, reason, note = decide(tests, static, tamper)
    timing: dict[str, float | str | None] = {
        "env": "given" if env.key == "given" else "built" if env.built_s is not None else "cached",
        "env_s": env.built_s,
    }
    return GateRow(
        spec.id, verdict, reason, note, base, report, tests, tuple(tamper), static,
        diff_size(parsed.files, texts[0], texts[1]), timing=timing,
        judge=_judge(judge, spec, parsed),
    )  # fmt: skip


def _judge(judge: Judge | None, spec: GateSpec, parsed: ParsedPatch) -> JudgeResult | None:
    if judge is None or not spec.intent:
        return None
    from judge import JudgeItem  # noqa: PLC0415 - loads the client only when judging

    item = JudgeItem(
        sample_id=spec.id, fn="patch", spec=spec.intent[:_MAX_INTENT],
        signature=", ".join(parsed.paths)[:1000], code=parsed.text, rubric_name="patch",
    )  # fmt: skip
    return judge.judge_many([item])[0]


def _refused(spec: GateSpec, base: str, why: str) -> GateRow:
    return GateRow(spec.id, "fail", "patch_refused", why, base, ApplyReport(None, why))


def _environment(spec: GateSpec, config: GateConfig, wt: Worktree) -> TestEnv:
    if config.env is not None:
        return given_env(config.env)
    name = spec.lockfile or next((n for n in _LOCKFILES if wt.show(wt.commit, n) is not None), None)
    text = wt.show(wt.commit, name) if name else None
    if name and text is None:
        raise SetupError(f"{spec.where or spec.id}: lockfile {name!r} is not in the base revision")
    return ensure_env(
        config.env_cache, repo_name=spec.repo.resolve().name, python=config.python,
        lockfile_name=name, lockfile_text=text,
    )  # fmt: skip


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


def _existing(targets: list[str], tree: Path) -> list[str]:
    return [t for t in targets if (tree / t).is_file()]


def _base_runs(
    wt: Worktree,
    hidden: ParsedPatch | None,
    env: TestEnv,
    targets: list[str],
    config: GateConfig,
    readonly: tuple[str, ...],
) -> tuple[list[SuiteRun], str | None]:
    if hidden is not None and wt.apply(hidden.text)[0] is None:
        return [], "the hidden test patch does not apply to base"
    runs = []
    for _ in range(max(1, config.base_runs)):
        run = run_suite(wt.path, env, _existing(targets, wt.path), config.limits, collect=False,
                        readonly=readonly)  # fmt: skip
        if not run.reliable:
            return [], "the tests cannot be run at base: " + "; ".join(run.problems)
        runs.append(run)
    wt.reset()
    return runs, None


def _tests(spec: GateSpec, base_runs: list[SuiteRun], head: SuiteRun) -> TestsPart:
    stable, flaky = quarantine([r.statuses for r in base_runs])
    first = base_runs[0].statuses

    def base_of(i: str) -> Status | None:
        return stable.get(i, first.get(i))

    everything = sorted(set(first) | set(stable) | set(head.statuses))
    by_cat: dict[str, list[str]] = {}
    for i in everything:
        by_cat.setdefault(categorize(base_of(i), head.statuses.get(i)), []).append(i)
    f2p = {i: categorize(base_of(i), head.statuses.get(i)) for i in spec.tests.fail_to_pass}
    given = spec.tests.pass_to_pass
    auto = not isinstance(given, tuple)
    p2p_ids = (
        [i for i, s in stable.items() if s == "passed" and i not in f2p] if auto else list(given)
    )
    p2p = {i: categorize(base_of(i), head.statuses.get(i)) for i in p2p_ids if i not in set(flaky)}
    return TestsPart(
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        by_category={k: tuple(v) for k, v in sorted(by_cat.items())},  # type: ignore[misc]
        quarantined=flaky,
        base_runs=len(base_runs),
        head_problems=head.problems,
        head_timed_out=head.timed_out,
        head_exit_code=head.exit_code,
        collected=head.collected,
        pass_to_pass_auto=auto,
    )


def _texts(
    parsed: ParsedPatch, wt: Worktree, base: str
) -> tuple[dict[str, str | None], dict[str, str]]:
    before: dict[str, str | None] = {}
    after: dict[str, str] = {}
    for c in parsed.files:
        before[c.path] = wt.show(base, c.old_path) if c.old_path else None
        p = wt.path / c.path
        real = c.kind != "deleted" and p.is_file() and not p.is_symlink()
        if real and p.stat().st_size <= _MAX_FILE_BYTES:
            after[c.path] = p.read_bytes().decode("utf-8", "replace")
    return before, after


def _restore_tests(
    wt: Worktree, parsed: ParsedPatch, hidden: ParsedPatch | None
) -> tuple[str, ...]:
    if hidden is None:
        return ()
    mine = set(parsed.paths)
    paths = [p for p in hidden.paths if p in mine]
    wt.restore(paths)
    return tuple(paths)


def _tamper(
    parsed: ParsedPatch, head_texts: dict[str, str], protected: tuple[str, ...]
) -> list[TamperHit]:
    """Scan added lines of every Python file except the protected ones (the tests' own)."""
    hits: list[TamperHit] = []
    for c in parsed.files:
        ours = any(glob_matches(p, c.path) for p in protected if "#" not in p)
        if c.path.endswith(".py") and c.path in head_texts and not ours:
            hits += scan(c.path, head_texts[c.path], c.added_lines)
            shadow = shadows(c.path) if c.kind in ("added", "renamed") else None
            hits += [shadow] if shadow is not None else []
    return hits


def _pins(spec: GateSpec, wt: Worktree, base: str, env: TestEnv) -> dict[str, str] | None:
    """What the tests may import: the base lockfile's pins, else what the environment holds."""
    name = spec.lockfile or next((n for n in _LOCKFILES if wt.show(base, n) is not None), None)
    pins = {}
    for info in env.path.glob("lib/python*/site-packages/*.dist-info"):
        dist, _, version = info.name[: -len(".dist-info")].partition("-")
        pins[dist.lower().replace("_", "-")] = version
    if name is None:
        return pins
    text = wt.show(base, name) or ""
    tmp = wt.path.parent / Path(name).name
    tmp.write_text(text, encoding="utf-8")
    try:
        return read_lockfile(tmp)
    except LockfileError:
        return pins
    finally:
        tmp.unlink()


def _local_modules(tree: Path) -> set[str]:
    out = set()
    for root in (tree, tree / "src"):
        if not root.is_dir():
            continue
        for p in root.iterdir():
            if p.is_symlink():
                continue
            if p.suffix == ".py":
                out.add(p.stem)
            elif p.is_dir() and any(p.glob("*.py")):
                out.add(p.name)
    return out
