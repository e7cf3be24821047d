"""Checking many JSON Lines against one schema by their shape: one check per kind of line.

A ``hidden.jsonl`` holds hundreds of cases that differ mostly in their values:
arguments and expected values, which the schema checks by JSON type alone
(``args`` is an array, ``expect`` anything, or a string in a stdio case).
:class:`ShapeMemo` reads off the schema itself which top-level properties it
checks by type only, and maps a line to its *shape*: the line with each such
value replaced by a canonical value of the same JSON types (every other value
kept as it is). Two lines of one shape are valid or invalid together, so a
shape found valid once needs no second check; a line of a new shape, and every
invalid line (for its messages), is checked in full.

A schema with anything at its root that this module does not analyse (a
``$ref``, ``$defs``, ``patternProperties``, a schema for additional properties,
``enum`` of the whole line, ...) gets no memo: every line is then checked in
full, as without one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ShapeMemo", "type_only_properties"]

#: Root keywords this module understands: annotations, checks of the line's keys, and
#: applicators whose subschemas are analysed the same way.
_ROOT_KEYWORDS = frozenset(
    {
        "$schema",
        "$id",
        "title",
        "description",
        "x-message",
        "type",
        "required",
        "additionalProperties",
        "properties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
    }
)
#: What a property's subschema may hold for its value to count as checked by type only.
_TYPE_ONLY = frozenset({"type", "title", "description", "x-message"})


def type_only_properties(schema: Mapping[str, Any]) -> frozenset[str] | None:
    """Top-level properties whose values ``schema`` checks by JSON type and nothing else.

    Every subschema that applies to the whole line (through ``allOf``, ``anyOf``,
    ``oneOf``, ``not``, ``if``, ``then``, ``else``) is read; a property counts when
    each ``properties`` entry for it anywhere holds only ``type`` and annotations.

    Returns:
        Their names, or ``None`` when the schema uses a root keyword not analysed here.
    """
    verdict: dict[str, bool] = {}

    def walk(node: object) -> bool:
        if not isinstance(node, Mapping) or set(node) - _ROOT_KEYWORDS:
            return False
        if not isinstance(node.get("additionalProperties", False), bool):
            return False
        props = node.get("properties", {})
        if not isinstance(props, Mapping):
            return False
        for name, sub in props.items():
            plain = isinstance(sub, Mapping) and set(sub) <= _TYPE_ONLY
            verdict[name] = verdict.get(name, True) and plain
        subs = [node[k] for k in ("not", "if", "then", "else") if k in node]
        for key in ("allOf", "anyOf", "oneOf"):
            group = node.get(key, [])
            if not isinstance(group, list):
                return False
            subs += group
        return all(walk(sub) for sub in subs)

    if not walk(schema):
        return None
    return frozenset(name for name, plain in verdict.items() if plain)


def _canonical(value: object) -> object:
    """A value of exactly the JSON-schema types of ``value`` (``1.0`` is an integer too)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0 if value.is_integer() else 0.5
    if isinstance(value, str):
        return ""
    if isinstance(value, list):
        return []
    if isinstance(value, dict):
        return {}
    return value  # json.loads gives nothing else


@dataclass(slots=True)
class ShapeMemo:
    """The shapes of lines found valid so far, for one schema (one file's read)."""

    opaque: frozenset[str]
    """The properties checked by type only (:func:`type_only_properties`)."""
    valid: set[str] = field(default_factory=set)
    """Shapes of lines the schema accepted."""

    @classmethod
    def of(cls, schema: Mapping[str, Any]) -> ShapeMemo | None:
        """A memo for ``schema``, or ``None`` when its shapes cannot be trusted."""
        opaque = type_only_properties(schema)
        return None if opaque is None else cls(opaque)

    def shape(self, obj: object) -> str | None:
        """The line's shape, or ``None`` when it has none (not an object, too deep)."""
        if not isinstance(obj, dict):
            return None
        canon = {k: _canonical(v) if k in self.opaque else v for k, v in obj.items()}
        try:
            return json.dumps(canon, sort_keys=True)
        except (RecursionError, ValueError, TypeError):
            return None
