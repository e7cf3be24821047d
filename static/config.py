"""Configuration of the static layers: which tools run, with which rules, how.

Every layer module (``lint``, ``security``, ``typecheck``) and the batch runner
read these records; they live here so that no layer imports the runner (no
import cycle in ``static/``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

__all__ = ["GROUPS", "LayerName", "LintConfig", "LintGroup", "SecurityConfig", "StaticConfig"]

LayerName = Literal["lint", "types", "security"]
"""The tool layers the batch runner runs."""

LintGroup = Literal["bugs", "complexity", "docs", "annotations"]
"""A separately reportable group of ruff rules."""

GROUPS: Mapping[LintGroup, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "bugs": (
        (
            "F", "E9", "E722", "B", "PLE", "PLW", "PLR0124", "PLR0133", "ASYNC",
            "RUF006", "RUF008", "RUF009", "RUF012", "RUF016", "RUF017", "RUF018",
            "RUF024", "PIE794", "PIE796", "T10",
        ),
        ("B009", "B010", "B028", "B904", "B905"),
    ),
    "complexity": (("C901",), ()),
    "docs": (("D",), ("D100", "D104")),
    "annotations": (("ANN",), ("ANN401",)),
}  # fmt: skip
"""Each group's ``(select, ignore)`` ruff rule selectors."""


@dataclass(frozen=True, slots=True)
class LintConfig:
    """Which ruff rules the lint layer reports."""

    select_groups: frozenset[LintGroup] = frozenset({"bugs"})
    """The groups of :data:`GROUPS` that are on."""
    max_complexity: int = 10
    """``C901`` fires above this McCabe complexity (``complexity`` group)."""
    extend_select: tuple[str, ...] = ()
    """Extra ruff selectors for a task set (reported as ``low`` unless in :data:`SEVERITY`)."""
    ignore: tuple[str, ...] = ()
    """ruff rules never reported."""

    def __post_init__(self) -> None:
        """Reject unknown groups and a complexity limit below 1; accept any iterable of groups."""
        object.__setattr__(self, "select_groups", frozenset(self.select_groups))
        unknown = set(self.select_groups) - set(GROUPS)
        if unknown:
            raise ValueError(f"unknown lint groups {sorted(unknown)}; known: {sorted(GROUPS)}")
        if self.max_complexity < 1:
            raise ValueError("max_complexity must be at least 1")


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    """Which bandit tests the security layer runs."""

    skip: tuple[str, ...] = ("B101", "B311")
    """bandit test ids never run."""


@dataclass(frozen=True, slots=True)
class StaticConfig:
    """Which tool layers run and how."""

    layers: frozenset[LayerName] = frozenset({"lint", "types", "security"})
    """The layers that run."""
    lint: LintConfig = field(default_factory=LintConfig)
    """ruff's rule groups."""
    security: SecurityConfig = field(default_factory=SecurityConfig)
    """bandit's skipped tests."""
    cache_dir: Path | None = None
    """mypy's persistent cache (created if missing); ``None`` analyses the stdlib every run."""
    jobs: int = 2
    """Cores to use."""
    timeout_s: float = 600.0
    """Wall-clock limit of each tool run."""
    ruff: str | None = None
    """The ruff executable; ``None`` finds it next to this Python, then on PATH."""
    mypy: str | None = None
    """The mypy executable; same lookup."""
    bandit: str | None = None
    """The bandit executable; same lookup."""

    def __post_init__(self) -> None:
        """Reject unknown layers and nonsensical limits."""
        known = get_args(LayerName)
        unknown = set(self.layers) - set(known)
        if unknown:
            raise ValueError(f"unknown layers {sorted(unknown)}; known: {sorted(known)}")
        if self.jobs < 1:
            raise ValueError("jobs must be at least 1")
        if self.timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
