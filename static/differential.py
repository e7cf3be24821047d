"""Differential findings: what a patch introduces, keeps and fixes.

The static layers run on each changed file at the base revision and at the
head; their findings are matched by a **fingerprint** that survives lines
moving (graylint's and SonarQube's "new code", GitHub code scanning's
``partialFingerprints``): the layer, the rule, the file's path and the
finding's line text with whitespace collapsed, plus the occurrence number
among findings with the same key (counted in line order), so two identical
findings on identical lines are told apart and a third one added is new.
The message is left out: tools put line numbers and inferred types in it.

Each finding gets a state (:data:`State`):

- ``new``: at head, with no base finding of the same fingerprint;
- ``unchanged``: at both;
- ``fixed``: at base only.

:func:`in_scope` is reviewdog's ``-filter-mode``, applied to ``new`` findings
(which of them count): ``added`` (on an added line), ``diff_context`` (on a
line of a hunk, added or context), ``file`` (in a changed file), ``nofilter``
(all of them). ``unchanged`` and ``fixed`` findings are listed, never counted.

This module uses only the standard library and imports no other layer.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from static.findings import Finding

__all__ = ["FilterMode", "Located", "State", "Tagged", "classify", "in_scope", "line_key"]

State = Literal["new", "unchanged", "fixed"]
"""Whether the patch introduced, kept or removed a finding."""

FilterMode = Literal["added", "diff_context", "file", "nofilter"]
"""Which new findings count (reviewdog's ``-filter-mode``)."""


@dataclass(frozen=True, slots=True)
class Located:
    """A finding in a file of the repository."""

    path: str
    """POSIX path relative to the repository (the head's name for a renamed file)."""
    finding: Finding
    """The finding; its line is in that version of the file."""


@dataclass(frozen=True, slots=True)
class Tagged:
    """A finding with its state and fingerprint."""

    path: str
    """POSIX path relative to the repository."""
    finding: Finding
    """The finding (head line numbers; base line numbers for ``fixed``)."""
    state: State
    """New, unchanged or fixed."""
    fingerprint: str
    """Stable across line moves: ``<sha256 prefix>:<occurrence>``."""


def line_key(text: str) -> str:
    """A line's text as fingerprints see it: whitespace collapsed."""
    return " ".join(text.split())


def _fingerprints(found: Sequence[Located], texts: Mapping[str, str]) -> list[tuple[str, Located]]:
    lines = {path: text.splitlines() for path, text in texts.items()}
    seen: Counter[str] = Counter()
    out = []
    ordered = sorted(found, key=lambda x: (x.path, x.finding.line, x.finding.col, x.finding.rule))
    for item in ordered:
        f = item.finding
        src = lines.get(item.path, [])
        text = line_key(src[f.line - 1]) if 0 < f.line <= len(src) else f"line:{f.line}"
        digest = hashlib.sha256(
            "\0".join([f.layer, f.rule, item.path, text]).encode("utf-8", "surrogatepass")
        ).hexdigest()[:16]
        seen[digest] += 1
        out.append((f"{digest}:{seen[digest]}", item))
    return out


def classify(
    base: Sequence[Located],
    head: Sequence[Located],
    base_texts: Mapping[str, str],
    head_texts: Mapping[str, str],
) -> list[Tagged]:
    """Tag every finding of both versions ``new``, ``unchanged`` or ``fixed``.

    Args:
        base: Findings at the base revision (paths under the head's names).
        head: Findings at the head.
        base_texts: Each file's text at base, by path.
        head_texts: Each file's text at head, by path.

    Returns:
        Head findings (new or unchanged) in path and line order, then the fixed ones.
    """
    before = dict(_fingerprints(base, base_texts))
    after = _fingerprints(head, head_texts)
    now = {fp for fp, _ in after}
    out = [
        Tagged(item.path, item.finding, "unchanged" if fp in before else "new", fp)
        for fp, item in after
    ]
    out += [Tagged(i.path, i.finding, "fixed", fp) for fp, i in before.items() if fp not in now]
    return out


def in_scope(
    tagged: Tagged,
    mode: FilterMode,
    added: Mapping[str, frozenset[int]],
    hunks: Mapping[str, frozenset[int]],
) -> bool:
    """Whether a ``new`` finding counts under ``mode`` (see the module docstring).

    Args:
        tagged: The finding.
        mode: The filter mode.
        added: Added head line numbers per changed file.
        hunks: Head line numbers inside hunks per changed file.
    """
    if tagged.state != "new":
        return False
    if mode == "nofilter":
        return True
    if mode == "file":
        return tagged.path in added or tagged.path in hunks
    lines = added if mode == "added" else hunks
    return tagged.finding.line in lines.get(tagged.path, frozenset())
