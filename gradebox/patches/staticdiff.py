"""The static layers on a patch: each changed Python file at base and at head, compared.

ruff, mypy and bandit (:func:`static.batch.check_batch`, each tool once over
both versions of every file) and imports-vs-lockfile (:func:`static.imports.check`,
the lockfile read at base; the repository's own top-level modules are local) run
on the changed ``.py`` files; :func:`static.differential.classify` tags each
finding new, unchanged or fixed, and the filter mode picks the new findings
that count. Only those go through the policy (:data:`PATCH_POLICY` by
default: a high-severity security finding, an invented import, or an import
of a distribution the lockfile does not pin fails the patch).

Diff size (:func:`diff_size`): files, added and removed lines, and the rewrite
ratio of each modified file by :func:`static.diffsize.check`, whose ``GBX201``
(gratuitous rewrite) and ``GBX202`` (large rewrite) findings join the head's
findings (they have no base counterpart, so they are new).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from gradebox.patches.diff import FileChange
from gradebox.patches.model import DiffFile, DiffSize, StaticPart
from static import diffsize, imports
from static.batch import Candidate, check_batch
from static.config import StaticConfig
from static.differential import FilterMode, Located, classify, in_scope
from static.findings import Finding
from static.policy import Policy, Selector, apply

__all__ = ["PATCH_POLICY", "StaticSettings", "diff_size", "differential"]

PATCH_POLICY = Policy(
    fail_on=(
        Selector(layer="security", min_severity="high"),
        Selector(layer="imports", rules=("GBX101", "GBX102")),
    )
)
"""New high-severity security findings and imports the lockfile does not back fail a patch."""


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
