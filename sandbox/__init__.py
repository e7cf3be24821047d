r"""Hidden tests in isolation: the case codec, the type-strict comparator, the sandbox.

Example:
    >>> from sandbox import open_sandbox, make_case, judge_case
    >>> case = make_case("inc", 1, expect=2)
    >>> with open_sandbox("auto", workers=1) as sb:  # doctest: +SKIP
    ...     run = sb.run("def inc(x):\\n    return x + 1\\n", "inc", [case])
    ...     judge_case(case, run.observations[0]).outcome
    'ok'

The names below are loaded on first use (PEP 562): ``import sandbox`` costs
nothing, and a program that only runs the sandbox never loads the case files'
JSON-schema validator.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandbox.cases import load_hidden, load_public, read_jsonl, resolve_error_name
    from sandbox.compare import judge_case, values_equal
    from sandbox.errors import InputError, IsolationUnavailable, SandboxError, WorkerError
    from sandbox.runner import Sandbox, open_sandbox
    from sandbox.types import (
        CaseOutcome,
        CaseResult,
        HiddenCase,
        Limits,
        Observation,
        PublicTask,
        RaisedInfo,
        RunResult,
        make_case,
    )

__all__ = [
    "CaseOutcome",
    "CaseResult",
    "HiddenCase",
    "InputError",
    "IsolationUnavailable",
    "Limits",
    "Observation",
    "PublicTask",
    "RaisedInfo",
    "RunResult",
    "Sandbox",
    "SandboxError",
    "WorkerError",
    "judge_case",
    "load_hidden",
    "load_public",
    "make_case",
    "open_sandbox",
    "read_jsonl",
    "resolve_error_name",
    "values_equal",
]

#: module -> the public names it defines
_EXPORTS = {
    "cases": ("load_hidden", "load_public", "read_jsonl", "resolve_error_name"),
    "compare": ("judge_case", "values_equal"),
    "errors": ("InputError", "IsolationUnavailable", "SandboxError", "WorkerError"),
    "runner": ("Sandbox", "open_sandbox"),
    "types": (
        "CaseOutcome",
        "CaseResult",
        "HiddenCase",
        "Limits",
        "Observation",
        "PublicTask",
        "RaisedInfo",
        "RunResult",
        "make_case",
    ),
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sandbox' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"sandbox.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    """The public names too, before their first use."""
    return sorted({*globals(), *__all__})
