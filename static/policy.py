"""Policy: which static findings gate a verdict and which only annotate.

A :class:`Policy` is configuration (per task set), not code: two lists of
:class:`Selector`. :func:`apply` returns the strongest effect any finding has:

- ``fail``: a finding matches ``fail_on``;
- ``review``: otherwise, a finding matches ``review_on``;
- ``pass``: otherwise (the findings only annotate the row).

The default (:data:`DEFAULT_POLICY`) fails a candidate on a high-severity
security finding (bandit ``HIGH`` with at least ``MEDIUM`` confidence: shell
injection, disabled certificate checks, weak hashes for security), on an
invented import (``GBX101``, a supply-chain risk) and on a dependency with a
known vulnerability rated high or critical (``deps``); any other known
vulnerability (``GBX311``, ``GBX312``: rated lower, or not rated) asks for
review; everything else annotates.

A selector's ``rules`` and ``except_rules`` match a finding's rule id or any of
its ``refs`` (the ``deps`` layer's advisory id and aliases), so ``rules =
["PYSEC-2014-8"]`` or ``except_rules = ["CVE-2014-1402"]`` select one advisory
by any of its names, and a task's ``allow_rules`` can allow one.

The effect only ever makes a verdict worse: the grader combines it with the
hidden tests, and a failed test stays failed whatever the policy says.

In a task set's configuration (TOML or JSON), read with :meth:`Policy.from_mapping`::

    [policy]
    fail_on = [
        {layer = "security", min_severity = "high", except_rules = ["B324"]},
        {layer = "imports", rules = ["GBX101"]},
        {layer = "deps", min_severity = "medium"},
        {layer = "deps", rules = ["GHSA-*", "PYSEC-2014-8"]},
    ]
    review_on = [{layer = "types", rules = ["GBX001"]}]
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, cast, get_args

from static.findings import Finding, Layer, Severity

__all__ = ["DEFAULT_POLICY", "Effect", "Policy", "Selector", "apply", "deciding"]

Effect = Literal["pass", "review", "fail"]
"""What the static findings do to a verdict."""

_RANK: dict[Severity, int] = {"info": 0, "low": 1, "medium": 2, "high": 3}
_SELECTOR_KEYS = frozenset({"layer", "rules", "min_severity", "except_rules"})


@dataclass(frozen=True, slots=True)
class Selector:
    """A set of findings: by layer, rule id pattern and minimum severity."""

    layer: Layer | None = None
    """Only findings of this layer; ``None`` for any layer."""
    rules: tuple[str, ...] = ("*",)
    """Rule ids or shell-style patterns (``"B6*"``, ``"GBX1??"``); any one must match."""
    min_severity: Severity = "info"
    """Only findings at least this severe."""
    except_rules: tuple[str, ...] = ()
    """Rule ids or patterns excluded even when the rest matches."""

    def matches(self, finding: Finding) -> bool:
        """Whether a finding is in this set.

        Args:
            finding: Any static finding.

        Returns:
            ``True`` when layer, severity, a rule pattern match and no exception matches
            (a pattern matches the rule id or one of the finding's ``refs``).
        """
        return (
            (self.layer is None or finding.layer == self.layer)
            and _RANK[finding.severity] >= _RANK[self.min_severity]
            and _any_match(finding, self.rules)
            and not _any_match(finding, self.except_rules)
        )

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> Selector:
        """Read a selector from configuration.

        Args:
            data: ``{"layer": ..., "rules": [...], "min_severity": ..., "except_rules": [...]}``,
                every key optional.

        Returns:
            The selector.

        Raises:
            ValueError: an unknown key, layer or severity, or a rule list that is not strings.
        """
        unknown = set(data) - _SELECTOR_KEYS
        if unknown:
            raise ValueError(
                f"unknown selector keys {sorted(unknown)}; known: {sorted(_SELECTOR_KEYS)}"
            )
        layer = data.get("layer")
        if layer is not None and layer not in get_args(Layer):
            raise ValueError(f"unknown layer {layer!r}; known: {list(get_args(Layer))}")
        severity = data.get("min_severity", "info")
        if not isinstance(severity, str) or severity not in _RANK:  # {} is unhashable
            raise ValueError(f"unknown severity {severity!r}; known: {list(_RANK)}")
        return cls(
            layer=cast("Layer | None", layer),
            rules=_patterns(data.get("rules", ["*"]), "rules"),
            min_severity=severity,
            except_rules=_patterns(data.get("except_rules", []), "except_rules"),
        )


@dataclass(frozen=True, slots=True)
class Policy:
    """Which findings fail a candidate, which ask for review; the rest annotate."""

    fail_on: tuple[Selector, ...] = (
        Selector(layer="security", min_severity="high"),
        Selector(layer="imports", rules=("GBX101",)),
        Selector(layer="deps", min_severity="high"),
    )
    """A finding in any of these makes the effect ``fail``."""
    review_on: tuple[Selector, ...] = (Selector(layer="deps", rules=("GBX311", "GBX312")),)
    """A finding in any of these (and none in ``fail_on``) makes it ``review``."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> Policy:
        """Read a policy from configuration; a missing list keeps its default.

        Args:
            data: ``{"fail_on": [selector, ...], "review_on": [selector, ...]}``.

        Returns:
            The policy.

        Raises:
            ValueError: an unknown key or a bad selector; the message says which.
        """
        unknown = set(data) - {"fail_on", "review_on"}
        if unknown:
            raise ValueError(f"unknown policy keys {sorted(unknown)}; known: fail_on, review_on")
        default = cls()
        return cls(
            fail_on=_selectors(data.get("fail_on"), "fail_on", default.fail_on),
            review_on=_selectors(data.get("review_on"), "review_on", default.review_on),
        )


DEFAULT_POLICY = Policy()
"""High-severity security findings, invented imports and dependencies with a known high or
critical vulnerability fail; other known vulnerabilities ask for review; the rest annotates."""


def apply(findings: Iterable[Finding], policy: Policy = DEFAULT_POLICY) -> Effect:
    """The effect of a candidate's static findings under a policy.

    Args:
        findings: All static findings of one candidate.
        policy: The task set's policy.

    Returns:
        ``"fail"``, ``"review"`` or ``"pass"``; see the module docstring.
    """
    effect: Effect = "pass"
    for finding in findings:
        if any(selector.matches(finding) for selector in policy.fail_on):
            return "fail"
        if any(selector.matches(finding) for selector in policy.review_on):
            effect = "review"
    return effect


def deciding(findings: Iterable[Finding], policy: Policy = DEFAULT_POLICY) -> list[Finding]:
    """The findings behind :func:`apply`'s answer (for the row's reason).

    Args:
        findings: All static findings of one candidate.
        policy: The task set's policy.

    Returns:
        The findings that match ``fail_on`` if any do, else those that match
        ``review_on``; empty when the effect is ``pass``.
    """
    listed = list(findings)
    for selectors in (policy.fail_on, policy.review_on):
        hits = [f for f in listed if any(s.matches(f) for s in selectors)]
        if hits:
            return hits
    return []


def _any_match(finding: Finding, patterns: tuple[str, ...]) -> bool:
    names = (finding.rule, *finding.refs)
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names)


def _patterns(value: object, key: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ValueError(f"{key} must be a list of rule ids or patterns, got {value!r}")
    if not all(isinstance(item, str) and item for item in value):
        raise ValueError(f"{key} must hold non-empty strings, got {value!r}")
    return tuple(value)


def _selectors(value: object, key: str, default: tuple[Selector, ...]) -> tuple[Selector, ...]:
    if value is None:
        return default
    if not isinstance(value, list | tuple) or not all(isinstance(v, Mapping) for v in value):
        raise ValueError(f"{key} must be a list of tables (selectors), got {value!r}")
    selectors = []
    for index, item in enumerate(value):
        try:
            selectors.append(Selector.from_mapping(item))
        except ValueError as exc:
            raise ValueError(f"{key}[{index}]: {exc}") from exc
    return tuple(selectors)
