"""Typed records of the sandbox layer: cases, limits, observations, outcomes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sandbox.child.wire import to_wire

__all__ = [
    "CaseKind",
    "CaseOutcome",
    "CaseResult",
    "Compare",
    "HiddenCase",
    "Limits",
    "Observation",
    "ObservationStatus",
    "PublicTask",
    "RaisedInfo",
    "RunResult",
    "job_cases",
    "make_case",
]

CaseOutcome = Literal[
    "ok", "wrong", "error", "not_raised", "timeout", "crash", "resource", "not_run"
]
"""How one hidden case ended for one candidate, after comparison: ``error`` is an
exception raised where none (or another) was expected, ``not_raised`` a value
returned where the case expected an exception, ``resource`` a case that ran out
of time or whose process died in a run that hit a cap on the whole process tree
(:attr:`RunResult.caps_hit` names it)."""

CaseKind = Literal["function", "stdio", "program"]
"""What a hidden case runs: ``function`` calls the task's function with arguments;
``stdio`` runs the candidate as a program with ``stdin`` and compares its stdout;
``program`` runs one test of a test program against the candidate, in its process."""

Compare = Literal["strict", "python", "tokens", "exact"]
"""How a case's result is compared: ``strict`` (type-strict, the default of
function cases) or ``python`` (the benchmark harness's own ``==``) for function
cases; ``tokens`` (whitespace-normalised, integers exact, other numbers within
``tol``/``rel_tol``, the default of stdio cases) or ``exact`` (byte for byte) for
stdio cases."""

ObservationStatus = Literal[
    "returned", "raised", "unserializable", "timeout", "crash", "resource", "not_run"
]
"""What the sandbox saw for one case, before comparison. ``resource`` is set by the
grader, never read from the sandbox: a ``timeout`` or ``crash`` in a run whose
process tree hit a cap (``detail`` names the caps)."""


@dataclass(frozen=True, slots=True)
class HiddenCase:
    """One line of ``hidden.jsonl``, decoded."""

    fn: str
    """The entry point: the function (or program) the case calls."""
    args: tuple[Any, ...]
    """Positional arguments, decoded from tagged JSON."""
    kwargs: dict[str, Any]
    """Keyword arguments, decoded from tagged JSON."""
    expect: Any = None
    """The expected return value (meaningless when ``error`` is set)."""
    error: str | None = None
    """Name of the expected exception class (``TypeError``, ``json.JSONDecodeError``)."""
    tol: float | None = None
    """Absolute tolerance applied where both sides are floats."""
    timeout_s: float | None = None
    """Wall-clock limit for this case; ``None`` means the run's default."""
    name: str | None = None
    """A readable label; shown only with ``--explain``."""
    line: int = 0
    """Line number in the source file, for messages."""
    kind: CaseKind = "function"
    """What the case runs (see :data:`CaseKind`)."""
    compare: Compare | None = None
    """How the result is compared; ``None`` is the kind's default."""
    rel_tol: float | None = None
    """Relative tolerance where both sides are floats (numbers, for stdio)."""
    stdin: str = ""
    """Standard input of a ``stdio`` case (its expected stdout is ``expect``)."""
    program: str = ""
    """Source of the test program of a ``program`` case (it runs in the sandbox)."""
    test: str = ""
    """The test this ``program`` case runs: a function of the program taking no
    arguments, or ``Class.method`` of a ``unittest.TestCase`` class."""
    args_wire: list[Any] = field(default_factory=list)
    """The positional arguments as tagged JSON, exactly as sent to the sandbox."""
    kwargs_wire: dict[str, Any] = field(default_factory=dict)
    """The keyword arguments as tagged JSON, exactly as sent to the sandbox."""
    task: str = ""
    """The id of the task the case belongs to (``HumanEval/85``); left empty, it is
    ``fn`` (files from before task ids, where ``fn`` named the task)."""

    def __post_init__(self) -> None:
        """Fill in the task id of a case that names none: its entry point."""
        if not self.task:
            object.__setattr__(self, "task", self.fn)


@dataclass(frozen=True, slots=True)
class PublicTask:
    """One line of ``public.jsonl``: what may be shown to a model and the judge."""

    fn: str
    """The entry point: the function (or program) the task's cases call."""
    spec: str = ""
    """The natural-language specification."""
    signature: str = ""
    """The expected signature, e.g. ``def is_even(n: int) -> bool``."""
    examples: tuple[dict[str, Any], ...] = ()
    """Public examples (raw JSON objects with ``args``/``expect``)."""
    allow_loops: bool = False
    """If true, an O(1) claim is not falsified by a loop."""
    helpers_allowed: bool = False
    """If true, more than one top-level function is accepted."""
    banned_imports: tuple[str, ...] | None = None
    """The task's import denylist; ``None`` means the run's default."""
    rubric: str = "default"
    """Name of the rubric the judge uses."""
    static: str = ""
    """The task's own static settings (``policy``, ``allow_rules``) as canonical JSON
    text, or empty; the sandbox never reads them (the grader does)."""
    line: int = 0
    """Line number in the source file, for messages."""
    task: str = ""
    """The task's id (``HumanEval/85``); left empty, it is ``fn``."""

    def __post_init__(self) -> None:
        """Fill in the id of a task that names none: its entry point."""
        if not self.task:
            object.__setattr__(self, "task", self.fn)


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits for one candidate's process tree.

    Every limit is enforced from outside the candidate's code (rlimits set
    before it runs, tmpfs sizes, a wall clock kept by the zygote and another
    by the grader).
    """

    case_timeout_s: float = 2.0
    """Default wall-clock limit per case."""
    candidate_timeout_s: float = 20.0
    """Wall-clock limit for all cases of one candidate together."""
    memory_mb: int = 1024
    """Address-space limit (RLIMIT_AS) per process."""
    max_procs: int = 64
    """Processes and threads in the sandbox at once (RLIMIT_NPROC)."""
    max_file_mb: int = 16
    """Largest file a candidate may write (RLIMIT_FSIZE)."""
    scratch_mb: int = 32
    """Size of each of the scratch dir, ``/tmp`` and ``/dev/shm`` (tmpfs)."""
    max_open_files: int = 64
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    output_bytes: int = 64 * 1024
    """Bytes kept of each of stdout and stderr; the rest is drained and dropped."""
    result_bytes: int = 8 * 1024 * 1024
    """Largest serialized result of one case."""
    tree_limits: bool = True
    """Cap memory and processes of the whole process tree with a cgroup (the
    sandbox refuses to start when it cannot); False keeps per-process rlimits only."""
    max_timeouts: int = 1
    """Stop a candidate after this many timed-out cases (the rest are ``not_run``);
    0 runs every case whatever happens. A candidate that timed out has failed, so
    the default spends no more than one case limit on it."""


@dataclass(frozen=True, slots=True)
class RaisedInfo:
    """An exception raised by the candidate, as plain data."""

    type_name: str
    """Dotted name of the exception's class, as the candidate's process saw it."""
    mro: tuple[str, ...]
    """Dotted names of the classes in its MRO that are the genuine builtin or
    standard-library class of that name (a look-alike class is left out)."""
    message: str = ""
    """``str(exc)``, truncated."""


@dataclass(frozen=True, slots=True)
class Observation:
    """What the sandbox saw for one case; compared with the expectation outside."""

    status: ObservationStatus
    """How the call ended."""
    value: Any = None
    """The decoded return value when ``status == "returned"``."""
    raised: RaisedInfo | None = None
    """The exception when ``status == "raised"``."""
    detail: str = ""
    """Why, for ``unserializable`` and ``crash``."""
    duration_s: float = 0.0
    """Wall time of the call as measured inside the sandbox."""


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of one case after comparison."""

    outcome: CaseOutcome
    """The comparison's result."""
    detail: str = ""
    """A short reason; never contains the expected value."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """Everything the sandbox observed for one candidate."""

    observations: tuple[Observation, ...]
    """One per case, in case order."""
    stdout: str = ""
    """Captured standard output (capped, decoded leniently)."""
    stderr: str = ""
    """Captured standard error (capped, decoded leniently)."""
    wall_s: float = 0.0
    """Wall time for the whole candidate, measured by the grader."""
    infra_error: str | None = None
    """Set when the grader or sandbox itself failed: not the candidate's fault."""
    caps_hit: tuple[str, ...] = ()
    """The caps on the whole process tree the candidate ran into (``memory``,
    ``processes``), read from its worker's cgroup; empty without tree limits.
    When set, every case that ran out of time or whose process died is observed
    as ``resource``."""


def job_cases(cases: Sequence[HiddenCase], default_timeout_s: float) -> dict[str, Any]:
    """The ``cases`` and ``programs`` of a sandbox job: what goes into the sandbox.

    Function cases carry their arguments, stdio cases their stdin, program cases
    the index of their test program and the test's name. Expected values never
    go in (a test program holds its own, which is why its row says ``program``).
    """
    programs: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    for c in cases:
        item: dict[str, Any] = {"timeout_s": c.timeout_s or default_timeout_s}
        if c.kind == "function":
            item.update(args=c.args_wire, kwargs=c.kwargs_wire)
        elif c.kind == "stdio":
            item.update(kind="stdio", stdin=c.stdin)
        else:
            index = programs.setdefault(c.program, len(programs))
            item.update(kind="program", program=index, test=c.test)
        out.append(item)
    return {"cases": out, "programs": list(programs)}


def make_case(
    fn: str,
    *args: Any,
    expect: Any = None,
    error: str | None = None,
    tol: float | None = None,
    timeout_s: float | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> HiddenCase:
    """Build a :class:`HiddenCase` from Python values (for tests and generated suites).

    Example:
        >>> make_case("add", 1, 2, expect=3).args
        (1, 2)
    """
    return HiddenCase(
        fn=fn,
        args=tuple(args),
        kwargs=dict(kwargs),
        expect=expect,
        error=error,
        tol=tol,
        timeout_s=timeout_s,
        name=name,
        args_wire=[to_wire(a) for a in args],
        kwargs_wire={k: to_wire(v) for k, v in kwargs.items()},
    )
