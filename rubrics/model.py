"""The loaded rubric: frozen records, and the prompt template contract.

A rubric is data. The judge renders its prompt from a :class:`Rubric` and
validates replies against it; nothing here talks to a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "JSON_MODE_FIELDS",
    "SYSTEM_FIELDS",
    "USER_FIELDS",
    "USER_REQUIRED",
    "Criterion",
    "Prompt",
    "Rubric",
    "Scale",
]

SYSTEM_FIELDS = frozenset(
    {
        "rubric_title",
        "rubric_version",
        "scale_min",
        "scale_max",
        "scale_labels",
        "criteria",
        "verdict_rule",
        "begin_task",
        "end_task",
        "begin_code",
        "end_code",
    }
)
"""Placeholders a system template may use (``$name``, :class:`string.Template`)."""
USER_FIELDS = frozenset(
    {
        "fn",
        "signature",
        "spec",
        "code",
        "line_count",
        "begin_task",
        "end_task",
        "begin_code",
        "end_code",
    }
)
"""Placeholders a user template may use."""
USER_REQUIRED = frozenset({"begin_code", "code", "end_code"})
"""Placeholders every user template must use: the code goes in only between its boundaries."""
JSON_MODE_FIELDS = frozenset({"schema"})
"""Placeholders of ``json_mode.txt``, appended to the system prompt on JSON-mode endpoints."""


@dataclass(frozen=True, slots=True)
class Scale:
    """The integer scale every criterion of a rubric is scored on (higher is better)."""

    min: int
    """Lowest score."""
    max: int
    """Highest score."""
    labels: Mapping[int, str]
    """What a score means; not every score needs a label."""

    @property
    def values(self) -> tuple[int, ...]:
        """Every allowed score, ascending."""
        return tuple(range(self.min, self.max + 1))


@dataclass(frozen=True, slots=True)
class Criterion:
    """One scored criterion, documented in ruff's rule shape."""

    id: str
    """Stable code, e.g. ``INT001``; never renumbered."""
    name: str
    """Kebab-case name, e.g. ``meets-spec``."""
    weight: float
    """Relative weight in the rubric's weighted score (> 0)."""
    what: str
    """What it does: what the criterion looks at."""
    why: str
    """Why is this bad? Why a low score matters."""
    example: str
    """Code that scores low."""
    use_instead: str
    """Code that scores high."""
    references: tuple[str, ...]
    """Further reading (URLs), possibly empty."""
    origin: str
    """Name of the rubric that defines it (differs from the rubric's for included criteria)."""


@dataclass(frozen=True, slots=True)
class Prompt:
    """Prompt templates (:class:`string.Template` text) that live with the rubric."""

    name: str
    """The template set's name (``judge`` for ``prompts/judge.*.txt``)."""
    system: str
    """System message; placeholders from :data:`SYSTEM_FIELDS`."""
    user: str
    """User message; placeholders from :data:`USER_FIELDS`, including :data:`USER_REQUIRED`."""
    verdict: str
    """Text for ``$verdict_rule`` when the rubric asks for a verdict (no placeholders)."""
    json_mode: str
    """Appended to the system message when the endpoint only has JSON mode."""


@dataclass(frozen=True, slots=True)
class Rubric:
    """A loaded, validated rubric with its includes resolved."""

    name: str
    """Name tasks refer to it by."""
    version: str
    """``MAJOR.MINOR.PATCH``; part of the judge's cache key."""
    title: str
    """One-line title shown to the judge."""
    scale: Scale
    """The scale every criterion is scored on."""
    criteria: tuple[Criterion, ...]
    """Criteria in order: the rubric's own after those of its includes."""
    verdict: bool
    """Whether the judge is asked for an intent verdict and unmet requirements."""
    prompt: Prompt
    """The prompt templates."""
    source: str
    """Path of the rubric file."""
    digest: str
    """SHA-256 of everything above that the judge sees, so an edit without a
    version bump still changes the cache key."""

    @property
    def criterion_ids(self) -> tuple[str, ...]:
        """The criterion ids, in order."""
        return tuple(c.id for c in self.criteria)

    def weighted(self, scores: Mapping[str, int]) -> float:
        """Weighted mean of ``scores``, normalised to 0.0 (all min) .. 1.0 (all max).

        Args:
            scores: One score per criterion id of this rubric, within the scale.

        Returns:
            The normalised weighted mean.

        Raises:
            KeyError: A criterion has no score.
        """
        total = sum(c.weight for c in self.criteria)
        mean = sum(c.weight * scores[c.id] for c in self.criteria) / total
        return (mean - self.scale.min) / (self.scale.max - self.scale.min)
