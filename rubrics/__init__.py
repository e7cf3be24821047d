"""Rubrics for the judge: data files, their JSON schema, the loader and prompt templates.

Each rubric is a TOML file validated against ``rubric.schema.json``: criteria
with stable ids (``INT001``) documented in ruff's rule shape (what / why /
example / use instead), one integer scale, weights, a version. Prompt
templates live next to them in ``prompts/``. Shipped: ``intent``, ``quality``
and ``default`` (both).

Example:
    >>> import rubrics
    >>> r = rubrics.load("intent")
    >>> r.criterion_ids[0], r.scale.values
    ('INT001', (1, 2, 3, 4, 5))

This package uses only the standard library and ``jsonschema``; it imports no
other gradebox layer.
"""

from rubrics.errors import Problem, RubricError
from rubrics.loader import BUILTIN_DIR, builtin_names, load
from rubrics.model import (
    JSON_MODE_FIELDS,
    SYSTEM_FIELDS,
    USER_FIELDS,
    USER_REQUIRED,
    Criterion,
    Prompt,
    Rubric,
    Scale,
)

__all__ = [
    "BUILTIN_DIR",
    "JSON_MODE_FIELDS",
    "SYSTEM_FIELDS",
    "USER_FIELDS",
    "USER_REQUIRED",
    "Criterion",
    "Problem",
    "Prompt",
    "Rubric",
    "RubricError",
    "Scale",
    "builtin_names",
    "load",
]
