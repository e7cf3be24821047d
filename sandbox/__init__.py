r"""Hidden tests in isolation: the case codec, the type-strict comparator, the sandbox.

Example:
    >>> from sandbox import open_sandbox, make_case, judge_case
    >>> case = make_case("inc", 1, expect=2)
    >>> with open_sandbox("auto", workers=1) as sb:  # doctest: +SKIP
    ...     run = sb.run("def inc(x):\\n    return x + 1\\n", "inc", [case])
    ...     judge_case(case, run.observations[0]).outcome
    'ok'
"""

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
