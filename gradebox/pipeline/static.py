"""The static stage of ``gradebox grade``: tool layers batched, cheap checks per candidate.

Per batch of graded samples (:class:`StaticStage.run`, one call per chunk or
merged chunks), for every sample whose extraction succeeded:

- the tool layers (ruff, mypy, bandit) through :func:`static.batch.check_batch`,
  each tool once over the whole batch, on ``jobs`` cores; with
  :class:`static.batch.WarmTools` (what :func:`open_static_stage` sets up) mypy
  and bandit stay warm in worker processes across the run's batches;
- in this process: imports versus the lockfile (:func:`static.imports.check`),
  known vulnerabilities of the imported versions when an advisory database is
  given (:func:`static.deps.check`),
  diff size when the sample carries its ``original`` (:func:`static.diffsize.check`),
  complexity and documentation metrics (:func:`static.metrics.check`);
- the policy (:func:`static.policy.apply`): ``fail``, ``review`` or ``pass``.

The row's ``static`` field::

    {"findings": [{"layer", "rule", "severity", "line", "col", "message"}, ...],
     "metrics": {...}, "diff": {...} | null,
     "counts": {"by_layer": {...}, "by_severity": {...}},
     "effect": "pass" | "review" | "fail", "deciding": [rule ids],
     "infra_error": {layer: message} | null}

and ``null`` for a sample with no extracted code. A tool that failed is an
``infra_error`` for its layer, never a finding: the findings of the other
layers still count, and a sample whose hidden tests all pass becomes
``needs_review`` (reason ``infra_error``) since its pass cannot be confirmed.

Setup (:func:`open_static_stage`) reads the lockfile and the policy file and
checks that every tool is installed, before any grading; it starts the warm
workers in the background (mypy's first request analyses the standard library),
so that they warm up while the sandbox starts. :meth:`StaticStage.close` stops them.
"""

from __future__ import annotations

import importlib.metadata
import json
import tempfile
import tomllib
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from packaging.utils import canonicalize_name

from gradebox.errors import BadInput, SetupError
from gradebox.grade import Json, StaticFinding, StaticReport
from gradebox.pipeline.core import Annotation, Graded
from gradebox.pipeline.task_static import allowing, task_static
from sandbox.types import PublicTask
from static import deps, diffsize, imports, metrics
from static.advisories import AdvisoryError, AdvisoryStore
from static.batch import (
    Candidate,
    StaticConfig,
    StaticResult,
    WarmTools,
    check_batch,
)
from static.findings import Finding, ToolError
from static.lockfiles import LockfileError, read_lockfile
from static.policy import DEFAULT_POLICY, Policy, apply, deciding
from static.sarif import to_sarif

__all__ = [
    "WARM_BATCH",
    "StaticStage",
    "default_stdlib_cache",
    "load_policy",
    "may_import",
    "open_advisories",
    "open_static_stage",
    "parse_policy",
]


WARM_BATCH = 256
"""Samples per call with warm tools, but at a run's end: each call's mypy and bandit
requests, ruff run and syntax prescreen cost ~80 ms of CPU besides the files (on calls
of 64 samples that was a third of the stage)."""


class StaticStage:
    """Static findings, metrics and the policy's effect for batches of graded samples."""

    field = "static"
    """The row field this stage fills."""

    def __init__(
        self,
        config: StaticConfig,
        *,
        policy: Policy = DEFAULT_POLICY,
        pins: Mapping[str, str] | None = None,
        environment: Mapping[str, Sequence[str]] | None = None,
        keep_for_sarif: bool = False,
        tools: WarmTools | None = None,
        advisories: AdvisoryStore | None = None,
    ) -> None:
        """Set up the stage (the tools are not checked here: see :func:`open_static_stage`).

        Args:
            config: The tool layers' configuration (layers, cache, cores).
            policy: Which findings fail a sample and which ask for review.
            pins: ``{distribution: version}`` from the lockfile; ``None`` without one.
            environment: ``importlib.metadata.packages_distributions()``, computed once.
            keep_for_sarif: Keep every sample's findings and code for :meth:`sarif`.
            tools: Warm tool workers to check batches with (closed by :meth:`close`);
                ``None`` starts the tools afresh for every batch.
            advisories: The advisory store of the ``deps`` layer (closed by :meth:`close`);
                ``None``: the layer is off.
        """
        self.config = config
        self._tools = tools
        self.min_batch = 1 if tools is None else WARM_BATCH
        """Samples the scheduler gathers for a call (see :class:`gradebox.pipeline.core.Stage`)."""
        self.policy = policy
        self.pins = pins
        self.environment = (
            importlib.metadata.packages_distributions() if environment is None else environment
        )
        self._kept: dict[str, tuple[list[Finding], str]] | None = {} if keep_for_sarif else None
        self._policies: dict[str, Policy] = {}
        self.advisories = advisories
        self.advisories_used: str | None = None
        """The advisory snapshot as a run records it (``"<date> sha256:<hex>"``), if any."""
        if advisories is not None:
            self.advisories_used = f"{advisories.snapshot.date} {advisories.snapshot.digest}"
        self._installed: dict[str, str] | None = None

    def run(self, items: Sequence[Graded]) -> list[Annotation]:
        """Check every item that has extracted code; one annotation per item.

        Whatever one sample does to a tool or to our own checks, only that
        sample's annotation says so (``infra_error``); the others get their findings.
        """
        todo = [(k, g, g.code) for k, g in enumerate(items) if g.code is not None]
        candidates = [Candidate(code, g.fn, _signature(g)) for _, g, code in todo]
        results = self._check(candidates)
        notes = [Annotation(None)] * len(items)
        for (k, g, code), result in zip(todo, results, strict=True):
            notes[k] = self._annotate(g, code, result)
        return notes

    def check(self, candidates: list[Candidate]) -> list[StaticResult]:
        """The tool layers over ``candidates``, one result each (:meth:`run`'s first half)."""
        return self._check(candidates)

    def annotate(self, g: Graded, result: StaticResult) -> Annotation:
        """``g``'s annotation from its tool result and this process's own checks.

        :meth:`run`'s second half, for an item with code; ``result`` is its entry
        of :meth:`check`, which may have run in a batch of other stages' items.
        """
        if g.code is None:
            return Annotation(None)
        return self._annotate(g, g.code, result)

    def candidate(self, g: Graded, scope: str = "") -> Candidate | None:
        """What the tool layers check of ``g`` (``None``: no code); ``scope``: its cache scope."""
        if g.code is None:
            return None
        return Candidate(g.code, g.fn, _signature(g), scope)

    def close(self) -> None:
        """Stop the warm tool workers, if any, and close the advisory store; safe to call twice."""
        if self._tools is not None:
            self._tools.close()
        if self.advisories is not None:
            self.advisories.close()

    def advisories_notes(self) -> list[str]:
        """What to tell the user about the advisory snapshot: its age and identity, bad files."""
        if self.advisories is None:
            return []
        snap = self.advisories.snapshot
        notes = [
            f"advisories: {snap.records} records as of {snap.date or 'unknown'} ({snap.digest[:19]}"
            f"...), {snap.withdrawn} withdrawn left out, {snap.skipped} files skipped"
        ]
        return notes + [f"advisories: skipped {p}" for p in snap.problems[:10]]

    def _check(self, candidates: list[Candidate]) -> list[StaticResult]:
        try:
            if self._tools is not None:
                return self._tools.check_batch(candidates)
            return check_batch(candidates, self.config)
        except Exception:  # a bug a sample triggered: find it rather than fail the batch
            if len(candidates) == 1:
                raise
        return [self._check_alone(candidate) for candidate in candidates]

    def _check_alone(self, candidate: Candidate) -> StaticResult:
        try:
            return check_batch([candidate], self.config)[0]
        except Exception as exc:
            message = f"the tool layers raised {type(exc).__name__}"
            return StaticResult(findings=[], tool_errors=dict.fromkeys(self.config.layers, message))

    def crashed(self, items: Sequence[Graded], message: str) -> list[Annotation]:
        """Annotations for a batch whose checks raised: an infra error on each checked sample."""
        return [
            Annotation(None)
            if g.code is None
            else _note(self._field([], {}, None, {"static": message}))
            for g in items
        ]

    def sarif(self, order: Sequence[str], version: str) -> dict[str, Any]:
        """The SARIF 2.1.0 log of every kept sample's findings.

        Args:
            order: Sample ids in run order (ids without static results are left out).
            version: gradebox's version.

        Returns:
            The log, with each sample located in ``candidates/<sample id>.py``.
        """
        kept = self._kept or {}
        ids = [i for i in order if i in kept]
        results = [(i, f"candidates/{i}.py", kept[i][0]) for i in ids]
        return to_sarif(results, version, sources={i: kept[i][1] for i in ids})

    def _annotate(self, g: Graded, code: str, result: StaticResult) -> Annotation:
        findings, errors = list(result.findings), dict(result.tool_errors)
        try:
            if may_import(code):
                findings += imports.check(code, self.pins, environment=self.environment)
        except Exception as exc:  # our bug, triggered by this sample: its error only
            errors["imports"] = _raised("imports", exc)
        if self.advisories is not None and (may_import(code) or "# /// script" in code):
            try:
                findings += deps.check(
                    code, self.advisories, self.pins,
                    installed=self._installed_versions(), environment=self.environment,
                )  # fmt: skip
            except Exception as exc:
                errors["deps"] = _raised("deps", exc)
        numbers: dict[str, Any] = {}
        try:
            numbers, found = metrics.check(code)
            findings += found
        except Exception as exc:
            errors["metrics"] = _raised("metrics", exc)
        diff: dict[str, Any] | None = None
        if g.original is not None:
            try:
                diff, found = diffsize.check(code, g.original)
                findings += found
            except Exception as exc:
                errors["diff"] = _raised("diff", exc)
        findings.sort(key=lambda f: (f.line, f.col, f.layer, f.rule, f.message))
        if self._kept is not None:
            self._kept[g.sample_id] = (findings, code)
        policy = self.policy_for(g.public)
        return _note(
            self._field(findings, numbers, diff, dict(sorted(errors.items())) or None, policy)
        )

    def _installed_versions(self) -> dict[str, str]:
        """``{canonical distribution: version}`` installed here, read once (only without pins)."""
        if self.pins is not None:
            return {}
        if self._installed is None:
            self._installed = {
                str(canonicalize_name(d.metadata["Name"] or "")): d.version
                for d in importlib.metadata.distributions()
            }
        return self._installed

    def policy_for(self, public: PublicTask | None) -> Policy:
        """The policy for one task: its own (``public.jsonl`` ``static``), else the run's.

        A task's ``allow_rules`` are excluded from every selector: their findings
        stay on the row and never decide. Settings were checked when the file was read.
        """
        if public is None or not public.static:
            return self.policy
        found = self._policies.get(public.static)
        if found is None:
            task = task_static(json.loads(public.static))
            found = allowing(task.policy or self.policy, task.allow_rules)
            self._policies[public.static] = found
        return found

    def _field(
        self,
        findings: list[Finding],
        numbers: dict[str, Any],
        diff: dict[str, Any] | None,
        errors: dict[str, str] | None,
        policy: Policy | None = None,
    ) -> StaticReport:
        policy = policy or self.policy
        return StaticReport(
            findings=tuple(
                StaticFinding(f.layer, f.rule, f.severity, f.line, f.col, f.message)
                for f in findings
            ),
            metrics=cast(Json, numbers),
            diff=cast(Json, diff),
            effect=apply(findings, policy),
            deciding=tuple(dict.fromkeys(f.rule for f in deciding(findings, policy))),
            infra_error=errors,
        )


def may_import(code: str) -> bool:
    """Whether the imports layer can find anything in ``code``; ``False`` only when it cannot.

    :func:`static.imports.check` reads ``import`` and ``from ... import`` statements and
    calls of ``__import__``, ``import_module`` and ``importlib.import_module``: each
    needs the letters ``import`` in the code as Python reads it, i.e. after the NFKC
    normalisation Python applies to identifiers (``import_module`` spelt in
    fullwidth letters is ``import_module``). Skipping the check elsewhere skips its per-call set-up
    (~0.3 ms: every installed distribution's name canonicalised).
    """
    return "import" in unicodedata.normalize("NFKC", code)


def _raised(layer: str, exc: Exception) -> str:
    # A fixed message: the exception's text may quote the candidate.
    return f"the {layer} check raised {type(exc).__name__}"


def _note(value: StaticReport) -> Annotation:
    return Annotation(value)


def _signature(g: Graded) -> str | None:
    return (g.public.signature or None) if g.public is not None else None


def default_stdlib_cache(environ: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/gradebox/mypy-stdlib``, else ``~/.cache/gradebox/mypy-stdlib``."""
    base = environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".cache"
    return root / "gradebox" / "mypy-stdlib"


def open_static_stage(
    *,
    cache_dir: Path,
    jobs: int,
    lockfile: Path | None = None,
    policy_file: Path | None = None,
    keep_for_sarif: bool = False,
    stdlib_cache: Path | None = None,
    advisories: Path | None = None,
    advisories_cache: Path | None = None,
) -> StaticStage:
    """Read the static stage's inputs and check its tools, before any grading.

    Args:
        cache_dir: mypy's cache directory.
        jobs: Cores the tool layers may use.
        lockfile: requirements.txt, uv.lock, poetry.lock or pylock.toml; ``None``
            lets the installed environment stand in for it.
        policy_file: A TOML or JSON policy (:func:`load_policy`); ``None`` for the default.
        keep_for_sarif: Keep findings and code for a SARIF log.
        stdlib_cache: Where mypy's analysis of the standard library's core is kept
            between runs (see :class:`static.batch.WarmTools`); ``None`` keeps none.
        advisories: An OSV advisory directory or zip: turns the ``deps`` layer on.
        advisories_cache: Where its index is kept between runs; ``None``: a temporary
            one, rebuilt each run.

    Returns:
        The stage, its warm workers starting; close it (:meth:`StaticStage.close`).

    Raises:
        BadInput: The lockfile, the policy file or the advisory source is bad.
        SetupError: A tool is missing; the message says what to install.
    """
    pins = None
    if lockfile is not None:
        try:
            pins = read_lockfile(lockfile)
        except LockfileError as exc:
            raise BadInput([str(exc)]) from exc
    policy = DEFAULT_POLICY if policy_file is None else load_policy(policy_file)
    store = None if advisories is None else open_advisories(advisories, advisories_cache)
    config = StaticConfig(cache_dir=cache_dir, jobs=jobs)
    try:
        tools = WarmTools(config, stdlib_cache=stdlib_cache)
    except ToolError as exc:
        if store is not None:
            store.close()
        raise SetupError(f"static layers: {exc} (or skip them with --no-static)") from exc
    tools.start()
    return StaticStage(
        config, policy=policy, pins=pins, keep_for_sarif=keep_for_sarif, tools=tools,
        advisories=store,
    )  # fmt: skip


def open_advisories(source: Path, cache: Path | None) -> AdvisoryStore:
    """The advisory store of ``source``, indexed into ``cache/advisories`` when needed.

    Raises:
        BadInput: The source cannot be read or indexed.
    """
    try:
        if cache is None:  # a private folder: an index is trusted, never one another user planted
            scratch = Path(tempfile.mkdtemp(prefix="gradebox-adv-"))
            return AdvisoryStore.open(source, scratch, private=True)
        return AdvisoryStore.open(source, cache / "advisories")
    except AdvisoryError as exc:
        raise BadInput([f"--advisories: {exc}"]) from exc


def load_policy(path: Path) -> Policy:
    """Read a static policy from a TOML or JSON file.

    The file holds ``fail_on`` and ``review_on`` (lists of selectors, see
    :mod:`static.policy`), at the top level or in a ``policy`` table.

    Args:
        path: ``*.json`` is read as JSON, anything else as TOML.

    Returns:
        The policy.

    Raises:
        BadInput: The file cannot be read, does not parse, or is not a policy.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput([f"{path}: cannot read the static policy: {exc}"]) from exc
    return parse_policy(text, str(path), as_json=path.suffix == ".json")


def parse_policy(text: str, where: str, *, as_json: bool = False) -> Policy:
    """A static policy from its text (as :func:`load_policy` reads a file).

    Args:
        text: TOML, or JSON with ``as_json``.
        where: Where the text came from, for messages (a path, ``base:<commit>:<path>``).
        as_json: Parse as JSON rather than TOML.

    Raises:
        BadInput: The text does not parse or is not a policy.
    """
    try:
        data: Any = json.loads(text) if as_json else tomllib.loads(text)
    except ValueError as exc:
        raise BadInput([f"{where}: cannot read the static policy: {exc}"]) from exc
    if isinstance(data, dict) and isinstance(data.get("policy"), dict):
        data = data["policy"]
    if not isinstance(data, dict):
        raise BadInput([f"{where}: a static policy is a table with fail_on / review_on"])
    try:
        return Policy.from_mapping(data)
    except ValueError as exc:
        raise BadInput([f"{where}: {exc}"]) from exc
