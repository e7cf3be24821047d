"""From a :class:`Draft` to an :class:`ImportedTask`: function cases, a test program for the rest.

A converted statement stays a function case (its expected value outside the
sandbox) unless the reference check says otherwise:

* the reference passes it type-strictly: kept as it is;
* the reference passes it only by Python's lax ``==`` (``1 == 1.0``): under
  ``strict`` equality the reference's own value is expected (the task set is
  type-strict and the reference passes), under ``harness`` equality the case
  compares with Python's ``==``; either way the report lists it;
* the reference passes it only by truthiness (``assert candidate(x)`` returning
  a non-bool), or fails it: the statement runs in the test program instead.

Everything that does not convert runs in the test program, one case per
statement: a function ``_gbx_check_<n>`` that binds the candidate, repeats the
setup statements before it, and runs the statement.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

from gradebox.benchmarks.bounds import TooLarge, row_bytes_message
from gradebox.benchmarks.records import Draft, Equality, ImportedTask, Retyped, Statement
from sandbox.child.wire import Opaque, from_wire
from sandbox.compare import judge_case, values_equal
from sandbox.types import Compare, HiddenCase, Observation

__all__ = ["finish", "function_case", "program_source"]


def function_case(draft: Draft, stmt: Statement, *, compare: Compare | None = None) -> HiddenCase:
    """The function case of a converted statement."""
    conv = stmt.converted
    if conv is None:
        raise ValueError("the statement did not convert")
    return HiddenCase(
        fn=draft.fn,
        task=draft.task_id,
        args=tuple(from_wire(a, allow_opaque=False) for a in conv.args),
        kwargs={k: from_wire(v, allow_opaque=False) for k, v in conv.kwargs.items()},
        expect=None if conv.error else from_wire(conv.expect, allow_opaque=False),
        error=_resolved(conv.error),
        tol=conv.tol,
        rel_tol=conv.rel_tol,
        compare=compare,
        name=f"{draft.task_id} line {stmt.line}",
        args_wire=list(conv.args),
        kwargs_wire=dict(conv.kwargs),
    )


def _resolved(error: str | None) -> str | None:
    from sandbox.cases import resolve_error_name  # noqa: PLC0415 - only for error cases

    return None if error is None else resolve_error_name(error)


def program_source(
    draft: Draft, checks: list[int], *, limit: int | None = None
) -> tuple[str, list[str]]:
    """The test program running statements ``checks`` of ``draft``, and its test names.

    Each check repeats the setup statements before it, so a program can grow as
    the square of its row: with ``limit``, its size is reckoned first.

    Raises:
        TooLarge: The program would be more than ``limit`` characters (nothing is built).
    """
    if limit is not None:
        _check_program_size(draft, checks, limit)
    parts = [draft.head.rstrip() + "\n"] if draft.head.strip() else []
    names: list[str] = []
    for index in checks:
        # Bind the name the checks call the candidate by (not when it is ``fn`` itself:
        # the assignment would make the name local to the check function).
        body = [f"{draft.param} = {draft.fn}"] if draft.param != draft.fn else []
        body += [s.source for s in draft.statements[:index] if s.role == "setup"]
        body.append(draft.statements[index].source)
        name = f"_gbx_check_{index}"
        names.append(name)
        parts.append(f"\n\ndef {name}():\n" + textwrap.indent("\n".join(body), "    ") + "\n")
    return "".join(parts), names


def _check_program_size(draft: Draft, checks: list[int], limit: int) -> None:
    def indented(stmt: Statement) -> int:
        return len(stmt.source) + 5 * (stmt.source.count("\n") + 1)

    setup = 0
    before: list[int] = []  # characters of the setup statements before each statement
    for stmt in draft.statements:
        before.append(setup)
        if stmt.role == "setup":
            setup += indented(stmt)
    size = len(draft.head) + sum(before[i] + indented(draft.statements[i]) for i in checks)
    if size > limit:
        raise TooLarge(row_bytes_message("the test program", f"about {size} bytes", limit))


def finish(
    draft: Draft,
    observed: Mapping[int, Observation] | None,
    equality: Equality,
    *,
    limit: int | None = None,
) -> ImportedTask:
    """Decide every statement of ``draft`` and build the task.

    Args:
        draft: The task as read.
        observed: What the reference returned for each converted statement (by
            statement index), or ``None`` when the reference check did not run.
        equality: ``strict`` or ``harness``.
        limit: The most characters its test program may have (``--max-row-bytes``).

    Raises:
        TooLarge: The test program would be longer than ``limit``.
    """
    compare: Compare | None = "python" if equality == "harness" else None
    slots: list[HiddenCase | int] = []  # a case, or the index of a statement for the program
    retyped: list[Retyped] = []
    for index, stmt in enumerate(draft.statements):
        if stmt.role != "check":
            continue
        if stmt.converted is None or draft.all_program:
            slots.append(index)
            continue
        case = function_case(draft, stmt)  # judged type-strictly, whatever the equality
        obs = observed.get(index) if observed is not None else None
        if obs is None or judge_case(case, obs).outcome == "ok":
            slots.append(function_case(draft, stmt, compare=compare))
            continue
        decided = _lax(draft, stmt, case, obs, equality, len(slots))
        if decided is None:
            slots.append(index)
            continue
        new_case, note = decided
        retyped.append(note)
        slots.append(new_case if new_case is not None else index)
    return _assemble(draft, slots, tuple(retyped), limit)


def _lax(
    draft: Draft, stmt: Statement, case: HiddenCase, obs: Observation, equality: Equality, at: int
) -> tuple[HiddenCase | None, Retyped] | None:
    """A case the reference passes only by the benchmark's laxer check; ``None`` if it fails."""
    conv = stmt.converted
    if conv is None or obs.status != "returned" or _opaque(obs.value):
        return None
    value, lax = obs.value, conv.lax
    if lax == "eq":
        passes = values_equal(case.expect, value, tol=case.tol, rel_tol=case.rel_tol) or bool(
            _python_eq(case.expect, value)
        )
    elif lax in ("truthy", "falsy"):
        passes = bool(value) is (lax == "truthy")
    else:
        passes = False
    if not passes:
        return None
    literal, got = type(case.expect).__name__, type(value).__name__
    if lax != "eq":
        return None, Retyped(draft.task_id, at, literal, got, lax, "program")
    if equality == "harness":
        lax_case = function_case(draft, stmt, compare="python")
        return lax_case, Retyped(draft.task_id, at, literal, got, lax, "python_equality")
    strict = HiddenCase(
        fn=case.fn,
        task=case.task,
        args=case.args,
        kwargs=case.kwargs,
        expect=value,
        tol=case.tol,
        rel_tol=case.rel_tol,
        name=case.name,
        args_wire=case.args_wire,
        kwargs_wire=case.kwargs_wire,
    )
    return strict, Retyped(draft.task_id, at, literal, got, lax, "reference_value")


def _python_eq(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except RecursionError:
        return False


def _opaque(v: object) -> bool:
    if type(v) is Opaque:
        return True
    if isinstance(v, dict):
        return any(_opaque(k) or _opaque(x) for k, x in v.items())
    if isinstance(v, list | tuple | set | frozenset):
        return any(_opaque(x) for x in v)
    return False


def _assemble(
    draft: Draft, slots: list[HiddenCase | int], retyped: tuple[Retyped, ...], limit: int | None
) -> ImportedTask:
    checks = [s for s in slots if isinstance(s, int)]
    source, names = program_source(draft, checks, limit=limit) if checks else ("", [])
    by_index = dict(zip(checks, names, strict=True))
    cases: list[HiddenCase] = []
    for slot in slots:
        if isinstance(slot, HiddenCase):
            cases.append(slot)
            continue
        stmt = draft.statements[slot]
        cases.append(
            HiddenCase(
                fn=draft.fn,
                task=draft.task_id,
                args=(),
                kwargs={},
                kind="program",
                program=source,
                test=by_index[slot],
                name=f"{draft.task_id} line {stmt.line}",
            )
        )
    for test in draft.tests:
        cases.append(
            HiddenCase(
                fn=draft.fn,
                task=draft.task_id,
                args=(),
                kwargs={},
                kind="program",
                program=draft.program,
                test=test,
                name=f"{draft.task_id} {test}",
            )
        )
    cases.extend(draft.stdio)
    return ImportedTask(
        task_id=draft.task_id,
        fn=draft.fn,
        public=draft.public,
        cases=tuple(cases),
        reference=draft.reference,
        prefix=draft.prefix,
        retyped=retyped,
    )
