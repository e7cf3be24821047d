"""The static layers on a patch: each changed Python file at base and at head, compared.

ruff, mypy and bandit (:func:`static.batch.check_batch`, each tool once over
both versions of every file) and imports-vs-lockfile (:func:`static.imports.check`,
the lockfile read at base; the repository's own top-level modules are local) run
on the changed ``.py`` files; :func:`static.differential.classify` tags each
finding new, unchanged or fixed, and the filter mode picks the new findings
that count. Only those go through the policy (:data:`PATCH_POLICY` by
default: a high-severity security finding, an invented import, or an import
of a distribution the lockfile does not pin fails the patch).

Known vulnerabilities (``deps``, with ``StaticSettings.advisories``): every
changed dependency file (:func:`static.depfiles.is_dependency_file`:
requirements files, ``uv.lock``, ``poetry.lock``, ``pylock.toml``,
``pyproject.toml``) is read at base and at head, and each declared version is
looked up (:func:`static.deps.findings_for`). A vulnerability is identified by
its distribution and advisory id, not by its line: a patch that bumps a
dependency from one affected version to another keeps it (``unchanged``), one
that adds or bumps a dependency into an affected range introduces it (``new``,
on the declaration's line), and one that bumps it out is ``fixed``.

Diff size (:func:`diff_size`): files, added and removed lines, and the rewrite
ratio of each modified file by :func:`static.diffsize.check`, whose ``GBX201``
(gratuitous rewrite) and ``GBX202`` (large rewrite) findings join the head's
findings (they have no base counterpart, so they are new).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from gradebox.patches.diff import FileChange
from gradebox.patches.model import DiffFile, DiffSize, StaticPart
from static import depfiles, deps, diffsize, imports
from static.batch import Candidate, check_batch
from static.config import StaticConfig
from static.differential import FilterMode, Located, State, Tagged, classify, in_scope
from static.findings import Finding
from static.policy import Policy, Selector, apply

__all__ = ["PATCH_POLICY", "StaticSettings", "diff_size", "differential"]

PATCH_POLICY = Policy(
    fail_on=(
        Selector(layer="security", min_severity="high"),
        Selector(layer="imports", rules=("GBX101", "GBX102")),
        Selector(layer="deps", rules=("GBX311", "GBX312")),
    )
)
"""New high-severity security findings, imports the lockfile does not back and dependencies
with a known vulnerability fail a patch."""


@dataclass(frozen=True, slots=True)
class StaticSettings:
    """How the static layers run on a patch."""

    config: StaticConfig = field(default_factory=StaticConfig)
    """Tool layers, rule groups, tool paths."""
    policy: Policy = PATCH_POLICY
    """Which counted findings fail or ask for review."""
    filter_mode: FilterMode = "added"
    """Which new findings count."""
    max_rewrite: float = 0.6
    """A modified file rewritten beyond this share is ``GBX202``."""
    advisories: deps.AdvisoryLookup | None = None
    """The advisory store of the ``deps`` layer (``None``: off); opened and closed by the caller."""


def differential(
    changes: Sequence[FileChange],
    base_texts: Mapping[str, str | None],
    head_texts: Mapping[str, str],
    *,
    pins: Mapping[str, str] | None,
    local_modules: Collection[str],
    settings: StaticSettings,
) -> StaticPart:
    """Findings the patch introduces, keeps and fixes in its changed Python files.

    Args:
        changes: The patch's files.
        base_texts: Each changed path's text at base (``None``: absent), under its head name.
        head_texts: Each changed path's text at head (deleted files absent).
        pins: The base lockfile's pins (``None``: no lockfile).
        local_modules: The repository's own top-level modules.
        settings: Tools, policy, filter mode.

    Returns:
        The tagged findings, the counted ones and the policy's effect.
    """
    paths = [c.path for c in changes if c.path.endswith(".py") and c.path in head_texts]
    versions: list[tuple[str, str, str]] = []  # (side, path, text)
    for p in paths:
        versions.append(("head", p, head_texts[p]))
        if base_texts.get(p) is not None:
            versions.append(("base", p, base_texts[p] or ""))
    results = check_batch([Candidate(code=text, fn="") for _, _, text in versions], settings.config)
    found: dict[str, list[Located]] = {"base": [], "head": []}
    errors: set[str] = set()
    for (side, path, text), res in zip(versions, results, strict=True):
        found[side] += [Located(path, f) for f in res.findings]
        imported = imports.check(text, pins, local_modules=local_modules)
        found[side] += [Located(path, f) for f in imported]
        errors |= {f"{layer}: {what}"[:200] for layer, what in res.tool_errors.items()}
    found["head"] += _rewrites(changes, base_texts, head_texts, settings.max_rewrite)
    tagged = classify(
        found["base"], found["head"],
        {p: t for p, t in base_texts.items() if t is not None}, head_texts,
    )  # fmt: skip
    if settings.advisories is not None:
        tagged += _dependencies(changes, base_texts, head_texts, settings.advisories)
    added = {c.path: c.added_lines for c in changes}
    hunks = {c.path: c.hunk_lines for c in changes}
    counted = tuple(t for t in tagged if in_scope(t, settings.filter_mode, added, hunks))
    return StaticPart(
        findings=tuple(tagged),
        counted=counted,
        filter_mode=settings.filter_mode,
        effect=apply([t.finding for t in counted], settings.policy),
        tool_errors=tuple(sorted(errors)),
    )


def _dependencies(
    changes: Sequence[FileChange],
    base_texts: Mapping[str, str | None],
    head_texts: Mapping[str, str],
    store: deps.AdvisoryLookup,
) -> list[Tagged]:
    """Known vulnerabilities of changed dependency files, keyed by distribution and advisory."""
    sides: dict[str, dict[str, tuple[str, Finding]]] = {"base": {}, "head": {}}
    for c in changes:
        if not depfiles.is_dependency_file(c.path):
            continue
        for side, text in (("base", base_texts.get(c.path)), ("head", head_texts.get(c.path))):
            for d in depfiles.declarations(c.path, text or ""):
                where = f"declared in {c.path}"
                for f in deps.findings_for(store, d.dist, d.value, where, (d.line, 0)):
                    key = "\0".join((f.layer, f.rule, d.dist, *f.refs[:1]))
                    sides[side].setdefault(key, (c.path, f))
    out = []
    for key, (path, f) in sides["head"].items():
        state: State = "unchanged" if key in sides["base"] else "new"
        out.append(Tagged(path, f, state, _key_print(key)))
    for key, (path, f) in sides["base"].items():
        if key not in sides["head"]:
            out.append(Tagged(path, f, "fixed", _key_print(key)))
    return out


def _key_print(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16] + ":1"


def _rewrites(
    changes: Sequence[FileChange],
    base_texts: Mapping[str, str | None],
    head_texts: Mapping[str, str],
    max_rewrite: float,
) -> list[Located]:
    out = []
    for c in changes:
        before, after = base_texts.get(c.path), head_texts.get(c.path)
        if c.kind in ("modified", "renamed") and before is not None and after is not None:
            _, found = diffsize.check(after, before, max_rewrite=max_rewrite)
            out += [Located(c.path, _at_added(f, c)) for f in found]
    return out


def _at_added(f: Finding, c: FileChange) -> Finding:
    """A whole-file finding placed on the file's first added line (so filters keep it)."""
    line = min(c.added_lines) if c.added_lines else f.line
    return Finding(f.layer, f.rule, f.severity, line, f.col, f.message)


def diff_size(
    changes: Sequence[FileChange],
    base_texts: Mapping[str, str | None],
    head_texts: Mapping[str, str],
) -> DiffSize:
    """Files, lines and rewrite ratios of the patch."""
    files = []
    for c in changes:
        ratio = None
        before, after = base_texts.get(c.path), head_texts.get(c.path)
        if c.kind in ("modified", "renamed") and before is not None and after is not None:
            ratio = diffsize.check(after, before)[0]["rewritten_ratio"]
        files.append(DiffFile(c.path, c.kind, c.added, c.removed, ratio))
    return DiffSize(tuple(files))
