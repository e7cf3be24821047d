"""Types layer: mypy on each candidate, with the task's signature available.

What mypy checks is not the candidate file itself but :func:`prepare`'s copy of
it, which keeps every line of the candidate where it was:

1. **Suppressions are neutralised.** Comments with ``type: ignore`` or ``mypy:``
   are blanked (the same length, so columns hold): a candidate cannot hide its
   errors, as ruff runs with ``--ignore-noqa`` and bandit with ``--ignore-nosec``.
2. **The signature's annotations are injected** into the candidate's ``def fn``
   where it has none: ``def is_even(n):`` is checked as
   ``def is_even(n: int) -> bool:`` (parameters matched by position, keyword-only
   ones by name; only text on the ``def`` line(s) changes). So an unannotated
   candidate that returns ``"yes"`` is caught (``return-value``), and its body is
   checked with the argument types the task promises.
3. **A signature check is appended** after the candidate's last line: a function
   that takes the signature's parameters, calls ``fn`` with them (once with
   every argument, once with only the required ones when some have defaults) and
   returns the result as the signature's return type. It catches a candidate
   whose own annotations contradict the task (``-> int`` where the task says
   ``-> bool``, an extra required parameter). mypy's errors inside it are reported
   as ``GBX001`` (``static/rules.toml``) on the line of the candidate's ``def``.
   Names the signature uses that the candidate does not bind (``Optional``,
   ``Sequence``) are imported there under a private alias, so they never mask a
   candidate's own missing import. A signature naming something that cannot be
   resolved (a class the candidate does not define) is not checked at all.

mypy runs with the standard library only (``--no-site-packages``): results do
not depend on what the grader happens to have installed, and a third-party
import is not a finding (``--ignore-missing-imports``, ``import-untyped`` off;
the imports layer judges imports against the lockfile). Imports of ``.py``
modules are never followed (``--follow-imports=skip``; the standard library's
stubs still are): whatever lies next to a candidate on disk, mypy reads nothing
but the candidate and typeshed. Bodies of unannotated
helpers are checked too (``--check-untyped-defs``); "need type annotation for
``result``" (``var-annotated``) is off, since missing annotations are the lint
layer's ``annotations`` group, not a type error. No configuration file is read.
Options are in :data:`MYPY_FLAGS`.

Batch mode (:func:`check`) runs one mypy process over many files with a
persistent cache (``config.cache_dir``; the standard library is analysed once).
Each candidate is its own top-level module whose name is not a Python identifier
(``c-3f9a...``), so no candidate can import another or see its types. mypy
stops at the first file with a blocking error (a syntax error), so in a batch of
more than :data:`PRESCREEN_ABOVE` files those that do not compile are found first
(:func:`static.source.uncompilable`, in a child process) and each is checked
alone; a smaller batch is checked whole, and each file that stops mypy is kept
and the rest checked again. A syntax error that mypy reports in a file
that compiles means mypy could not read the code the sandbox runs: a
:class:`static.findings.FileErrors` for that file, never a finding. The warm single-candidate mode
(:class:`Worker`) keeps one mypy process alive and sends it requests.

Severity: ``syntax`` and ``name-defined`` are ``high`` (the code cannot run);
everything else (``GBX001`` included) is ``medium``.
"""

from __future__ import annotations

import ast
import builtins
import collections.abc
import io
import json
import os
import re
import subprocess
import sys
import tokenize
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from static.config import StaticConfig
from static.findings import FileErrors, Finding, Severity, ToolError
from static.source import parse, uncompilable
from static.tools import TOOL_ENV, ToolWorker, locate

__all__ = [
    "MYPY_FLAGS",
    "PRESCREEN_ABOVE",
    "PYTHON_VERSION",
    "WORKER_REQUESTS",
    "Worker",
    "check",
    "find_tool",
    "prepare",
]

PYTHON_VERSION = "3.11"
"""The Python version mypy checks candidates against."""

MYPY_FLAGS: tuple[str, ...] = (
    "--output=json",
    "--config-file=",
    f"--python-version={PYTHON_VERSION}",
    "--no-site-packages",
    "--follow-imports=skip",
    "--ignore-missing-imports",
    "--disable-error-code=import-untyped",
    "--disable-error-code=var-annotated",
    "--check-untyped-defs",
    "--no-error-summary",
    "--hide-error-context",
    "--no-pretty",
    "--no-color-output",
)
"""The options of every mypy run (plus ``--cache-dir``)."""

WORKER_REQUESTS = 1000
"""A :class:`Worker` is replaced after this many requests (mypy is not made to live forever)."""

WORKER_FILES = 2000
"""... or after this many files: a mypy process that checked n small candidates holds
~40 KB more for each (measured), so a run of 100,000 would need gigabytes; a new
worker costs ~0.3 s of CPU (mypy's import, the standard library read from the cache)."""

_PREFIX = "_gbx_"
_MARKER = "# gradebox: signature check of {fn} (def on line {line}); not the candidate's code"
_MARKER_RE = re.compile(r"^# gradebox: signature check of (\S+) \(def on line (\d+)\)")
_SUPPRESSION = re.compile(r"type\s*:\s*ignore|mypy\s*:")
_TEXT_LINE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?:(?P<column>\d+):)? (?P<severity>error|note): "
    r"(?P<message>.*?)(?:  \[(?P<code>[\w-]+)\])?$"
)
_SEVERITY: dict[str, Severity] = {"syntax": "high", "name-defined": "high"}
_WARMUP = (
    "import asyncio, bisect, collections, dataclasses, datetime, decimal, enum, fractions\n"
    "import functools, heapq, itertools, json, math, operator, random, re, statistics\n"
    "import string, typing\n"
)
_WORKER = (
    "import json, sys\n"
    "from mypy import api\n"
    "flags, replies = json.loads(sys.argv[1]), sys.stdout\n"
    "sys.stdout = sys.stderr\n"
    "for line in sys.stdin:\n"
    "    out, err, status = api.run([*flags, *json.loads(line)])\n"
    "    replies.write(json.dumps({'out': out, 'err': err, 'status': status}) + '\\n')\n"
    "    replies.flush()\n"
)

PRESCREEN_ABOVE = 16
"""Batches of more files than this are prescreened for files that do not compile.

Below it a file that stops mypy costs a rerun of at most this many small files
(about 1.5 ms each, warm), less than the prescreen's child process (20-45 ms of
CPU): a service's batch of a few samples spawns no child at all."""

_Runner = Callable[[Sequence[Path]], tuple[str, int]]
_Def = ast.FunctionDef | ast.AsyncFunctionDef
_Inserts = list[tuple[int, int, str]]


def find_tool(config: StaticConfig) -> str:
    """Locate the mypy binary (``config.mypy`` wins; see :func:`static.tools.locate`).

    Raises:
        ToolError: mypy is not installed.
    """
    return locate("mypy", config.mypy)


def check(files: Sequence[Path], config: StaticConfig) -> dict[Path, list[Finding]]:
    """Type-check prepared candidate files with as few mypy processes as possible.

    Args:
        files: Files written from :func:`prepare`; each is one candidate module.
        config: ``config.cache_dir`` keeps mypy's cache; ``config.timeout_s`` bounds each run.

    Returns:
        Findings per file (every given file is a key).

    Raises:
        ToolError: mypy is missing, crashed, timed out, or printed something unparseable.
        FileErrors: mypy could not parse some files that compile.
    """
    if not files:
        return {}
    cwd = Path(os.path.commonpath([path.parent for path in files]))
    run = _process(config, cwd)
    return _check_all(files, config, cwd, run, run)


class Worker(ToolWorker[tuple[str, int]]):
    """A long-lived mypy process for one candidate at a time on a warm service.

    The worker imports mypy once and calls ``mypy.api.run`` per request (the
    same options as batch mode, so the same findings); with mypy's modules loaded
    and its cache warm, a small candidate costs ~40 ms instead of ~400 ms for a
    fresh process. mypy runs in its own process, not in ours: it changes the
    garbage collector's thresholds and the recursion limit. (``dmypy`` would be
    faster, but mypy 2.4's daemon crashes or reports wrong errors when the
    imports change between requests.) The worker is recycled every
    :data:`WORKER_REQUESTS` requests or :data:`WORKER_FILES` files and restarted once
    if it dies; it exits by itself when this process goes away
    (:class:`static.tools.ToolWorker`). Not thread-safe: one per thread.
    """

    tool = "mypy"

    def __init__(self, config: StaticConfig, workdir: Path, *, warmup: str | None = None) -> None:
        """Start the worker and warm it up.

        Args:
            config: ``config.cache_dir`` is mypy's cache; ``config.timeout_s`` bounds requests.
            workdir: A private directory for the worker's log and warm-up file.
            warmup: The module checked first (its imports are analysed into the cache);
                ``None``: the standard library modules small candidates use most.

        Raises:
            ToolError: the worker did not start.
        """
        self._config = config
        self._root = workdir
        self._warmup = _WARMUP if warmup is None else warmup
        super().__init__(config.timeout_s, log=workdir / "mypy-worker.log")

    def check(self, files: Sequence[Path]) -> dict[Path, list[Finding]]:
        """Type-check prepared candidate files in the worker.

        Args:
            files: Files written from :func:`prepare` (usually one).

        Returns:
            Findings per file (every given file is a key).

        Raises:
            ToolError: the worker failed twice in a row.
        """
        if not files:
            return {}
        self._recycle_if_due()
        return _check_all(files, self._config, self._root, self._request, self._request)

    def _argv(self) -> list[str]:
        flags = [*MYPY_FLAGS, f"--cache-dir={_cache_dir(self._config)}"]
        return [sys.executable, "-I", "-c", _WORKER, json.dumps(flags)]

    def _limits(self) -> tuple[int, int | None]:
        return WORKER_REQUESTS, WORKER_FILES

    def _decode(self, reply: dict[str, Any]) -> tuple[str, int]:
        return str(reply["out"]), int(reply["status"])

    def _started(self) -> None:
        warmup = self._root / "warmup.py"
        warmup.write_text(self._warmup, encoding="utf-8")
        self._ask([warmup])
        warmup.unlink()
        self._files = 0  # candidates' files only


def prepare(code: str, fn: str, signature: str | None) -> str:
    """The text that mypy checks for one candidate (see the module docstring).

    Args:
        code: The candidate's source; never run.
        fn: The task's function name.
        signature: The task's signature (``"def is_even(n: int) -> bool"``), or ``None``.

    Returns:
        The candidate with suppressions neutralised, the signature's annotations
        injected and a signature check appended; every candidate line keeps its number.
    """
    text = _neutralize(code)
    if not text.endswith("\n"):
        text += "\n"
    plan = _plan(text, fn, signature)
    if plan is None:
        return text
    inserts, block = plan
    lines = text.splitlines(keepends=True)
    for row, col, insert in sorted(inserts, reverse=True):
        lines[row] = lines[row][:col] + insert + lines[row][col:]
    return "".join(lines) + block


def _cache_dir(config: StaticConfig) -> str:
    if config.cache_dir is None:
        return os.devnull
    config.cache_dir.mkdir(parents=True, exist_ok=True)
    return str(config.cache_dir)


def _process(config: StaticConfig, cwd: Path) -> _Runner:
    """A runner that starts one mypy process per call."""
    argv = [find_tool(config), *MYPY_FLAGS, f"--cache-dir={_cache_dir(config)}"]

    def run(files: Sequence[Path]) -> tuple[str, int]:
        try:
            proc = subprocess.run(
                [*argv, *map(str, files)],
                capture_output=True,
                timeout=config.timeout_s,
                cwd=cwd,
                env=TOOL_ENV,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ToolError(f"mypy did not run: {exc}") from exc
        # mypy exits 1 only when it reports errors: 1 (or 2) with nothing on stdout
        # means it broke (a crash, a wrong binary), not that the code is clean.
        silent = not proc.stdout.strip()
        if proc.returncode not in (0, 1, 2) or (proc.returncode in (1, 2) and silent):
            tail = proc.stderr.decode(errors="replace").strip()[-500:]
            raise ToolError(f"mypy failed with exit code {proc.returncode}: {tail}")
        return proc.stdout.decode(errors="replace"), proc.returncode

    return run


def _check_all(
    files: Sequence[Path], config: StaticConfig, cwd: Path, run: _Runner, run_alone: _Runner
) -> dict[Path, list[Finding]]:
    """``run`` the files that compile together, ``run_alone`` each one that does not."""
    if len({path.name for path in files}) != len(files):
        raise ValueError("file names must be unique: each names a module")
    # mypy stops at the first file that does not compile, so in a large batch those are
    # found first (a child process) and go alone. A small batch goes whole: each file that
    # stops mypy costs one rerun of the rest (``_until_done``), cheaper than the child.
    big = len(files) > PRESCREEN_ABOVE
    broken = uncompilable(files, timeout_s=config.timeout_s, cwd=cwd) if big else None
    errors: dict[Path, list[dict[str, Any]]] = {}
    good = [path for path in files if broken is None or path not in broken]
    if good:
        errors.update(_until_done(run, good))
    for path in files:
        if broken is not None and path in broken:
            errors.update(_until_done(run_alone, [path]))
    found = {path: _findings(path, errors.get(path, [])) for path in files}
    failed = _unparsed(errors, broken, config, cwd)
    if failed:
        raise FileErrors({p: f for p, f in found.items() if p not in failed}, failed)
    return found


def _unparsed(
    errors: dict[Path, list[dict[str, Any]]],
    broken: set[Path] | None,
    config: StaticConfig,
    cwd: Path,
) -> dict[Path, str]:
    """The files mypy could not parse although they compile: mypy failed on those."""
    suspects = [path for path, items in errors.items() if any(map(_is_parse_error, items))]
    if broken is None:  # not prescreened (a small batch): compile the suspects now
        broken = uncompilable(suspects, timeout_s=config.timeout_s, cwd=cwd)
    return {
        path: f"mypy could not parse {path.name}, which compiles"
        for path in suspects
        if path not in broken
    }


def _is_parse_error(item: dict[str, Any]) -> bool:
    # A malformed ``# type:`` comment is a syntax error of the comment, not of the code.
    return item.get("code") == "syntax" and "type comment" not in str(item["message"])


def _until_done(run: _Runner, files: Sequence[Path]) -> dict[Path, list[dict[str, Any]]]:
    """Run mypy; while a blocking error stops it, keep that file's errors and rerun the rest."""
    errors: dict[Path, list[dict[str, Any]]] = {}
    pending = list(files)
    while pending:
        out, status = run(pending)
        found = _parse(out, pending)
        errors.update(found)
        if status != 2:
            return errors
        blocked = [path for path in pending if path in found]
        if not blocked:
            raise ToolError(f"mypy stopped without saying where: {out.strip()[:300]!r}")
        pending = [path for path in pending if path not in found]
    return errors


def _parse(out: str, files: Sequence[Path]) -> dict[Path, list[dict[str, Any]]]:
    # By file name, i.e. module name: unique in a run, and errors that mypy replays
    # from its cache carry the directory of the run that cached them.
    known = {path.name: path for path in files}
    errors: dict[Path, list[dict[str, Any]]] = {}
    for line in out.splitlines():
        if not line.strip() or line.startswith("Success: no issues found"):
            continue
        item = _item(line)
        path = known.get(Path(str(item["file"])).name)
        if path is None:
            raise ToolError(f"mypy reported a file it was not given: {item['file']!r}")
        if item["severity"] == "error":
            errors.setdefault(path, []).append(item)
    return errors


def _item(line: str) -> dict[str, Any]:
    """One error line, JSON or (older mypy's blocking errors) text; ``col`` is 1-based."""
    if "INTERNAL ERROR" in line:
        raise ToolError(f"mypy crashed: {line[:300]}")
    match = _TEXT_LINE.match(line)
    if match is not None:
        item: dict[str, Any] = match.groupdict()
        item["line"], item["col"] = int(item["line"]), int(item["column"] or 0)
        return item
    try:
        item = json.loads(line)
        if not isinstance(item, dict):
            raise TypeError("not an object")
        fields = (item["file"], item["line"], item["column"], item["message"], item["severity"])
    except (ValueError, TypeError, KeyError) as exc:
        raise ToolError(f"mypy printed something unparseable: {line[:200]!r}") from exc
    if not all(isinstance(v, t) for v, t in zip(fields, (str, int, int, str, str), strict=True)):
        raise ToolError(f"mypy printed an error of an unexpected shape: {line[:200]!r}")
    # JSON columns are 0-based, except those of mypy's parser's syntax errors.
    item["col"] = item["column"] + (0 if item.get("code") == "syntax" else 1)
    return item


def _findings(path: Path, errors: list[dict[str, Any]]) -> list[Finding]:
    if not errors:
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    marker = _find_marker(text)
    findings = []
    for item in errors:
        code = str(item.get("code") or "misc")
        line, col, message = int(item["line"]), int(item["col"]), str(item["message"])
        if marker is not None and line >= marker[0]:
            _, fn, def_line = marker
            message = f"`{fn}` does not fit the task's signature: {message} [{code}]"
            code, line, col = "GBX001", def_line, 0
        findings.append(Finding("types", code, _SEVERITY.get(code, "medium"), line, col, message))
    return sorted(set(findings), key=lambda f: (f.line, f.col, f.rule, f.message))


def _find_marker(text: str) -> tuple[int, str, int] | None:
    # The last match: a candidate cannot write after the generated block.
    found = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _MARKER_RE.match(line)
        if match is not None:
            found = (number, match.group(1), int(match.group(2)))
    return found


def _neutralize(code: str) -> str:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return code  # mypy will report the syntax error itself
    lines = code.splitlines(keepends=True)
    for tok in tokens:
        if tok.type == tokenize.COMMENT and _SUPPRESSION.search(tok.string):
            row, start = tok.start
            line = lines[row - 1]
            lines[row - 1] = line[:start] + "#" + " " * (len(tok.string) - 1) + line[tok.end[1] :]
    return "".join(lines)


def _plan(text: str, fn: str, signature: str | None) -> tuple[_Inserts, str] | None:
    target, sig = _target(text, fn), _signature(signature)
    if target is None or sig is None:
        return None
    tree, node = target
    aliases = _aliases(sig, _bound_names(tree.body))
    if aliases is None:
        return None
    sig = _renamed(sig, aliases)
    inserts = _injections(text, node, sig)
    imports = "".join(f"{stmt}\n" for stmt in sorted(set(aliases.values())))
    header = _MARKER.format(fn=fn, line=node.lineno)
    return inserts, f"{header}\n{imports}{_check_function(fn, sig)}"


def _parse_quietly(source: str, mode: str = "exec") -> ast.AST | None:
    return parse(source, mode)


def _target(text: str, fn: str) -> tuple[ast.Module, _Def] | None:
    tree = _parse_quietly(text)
    if not isinstance(tree, ast.Module):
        return None
    defs = [s for s in tree.body if isinstance(s, _Def) and s.name == fn]
    return (tree, defs[-1]) if defs else None


def _signature(signature: str | None) -> _Def | None:
    if signature is None or not signature.strip():
        return None
    source = signature.strip().rstrip(":").rstrip()
    tree = _parse_quietly(f"{source}:\n    ...\n")
    if (
        not isinstance(tree, ast.Module)
        or len(tree.body) != 1
        or not isinstance(tree.body[0], _Def)
    ):
        return None
    sig = tree.body[0]
    annotations = [a.annotation for a in _all_args(sig.args)] + [sig.returns]
    return sig if any(a is not None for a in annotations) else None


def _all_args(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


def _bound_names(body: list[ast.stmt]) -> set[str]:
    """Names bound at module level (not inside function or class bodies)."""
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _annotation_names(sig: _Def) -> set[str]:
    roots = [a.annotation for a in _all_args(sig.args)] + [sig.returns]
    return {
        node.id
        for root in roots
        if root is not None
        for node in ast.walk(_unquoted(root))
        if isinstance(node, ast.Name)
    }


def _unquoted(node: ast.expr) -> ast.expr:
    """A whole-annotation string (a forward reference) as the expression it names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        tree = _parse_quietly(node.value, mode="eval")
        if isinstance(tree, ast.Expression):
            return tree.body
        return ast.Name(id="<unparseable>", ctx=ast.Load())
    return node


def _aliases(sig: _Def, bound: set[str]) -> dict[str, str] | None:
    """Import statements for the signature's free names; ``None`` if one is unknown."""
    aliases: dict[str, str] = {}
    for name in sorted(_annotation_names(sig) - bound - set(dir(builtins))):
        alias = f"{_PREFIX}{name}"
        if hasattr(typing, name):
            aliases[name] = f"from typing import {name} as {alias}"
        elif hasattr(collections.abc, name):
            aliases[name] = f"from collections.abc import {name} as {alias}"
        elif name in sys.stdlib_module_names:
            aliases[name] = f"import {name} as {alias}"
        else:
            return None
    return aliases


def _renamed(sig: _Def, aliases: dict[str, str]) -> _Def:
    """The signature with forward references unquoted and free names aliased."""

    def rename(node: ast.expr | None) -> ast.expr | None:
        if node is None:
            return None
        tree = _unquoted(node)
        for child in ast.walk(tree):
            if isinstance(child, ast.Name) and child.id in aliases:
                child.id = f"{_PREFIX}{child.id}"
        return tree

    for arg in _all_args(sig.args):
        arg.annotation = rename(arg.annotation)
    sig.returns = rename(sig.returns)
    return sig


def _injections(text: str, node: _Def, sig: _Def) -> _Inserts:
    """Where to insert the signature's annotations that the candidate's def lacks."""
    lines = text.splitlines(keepends=True)
    inserts = []
    for mine, theirs in _param_pairs(node.args, sig.args):
        if mine.annotation is None and theirs.annotation is not None:
            row = (mine.end_lineno or mine.lineno) - 1
            col = _char_col(lines[row], mine.end_col_offset or 0)
            inserts.append((row, col, f": {ast.unparse(theirs.annotation)}"))
    if node.returns is None and sig.returns is not None:
        colon = _header_colon(text, node)
        if colon is not None:
            inserts.append((colon[0], colon[1], f" -> {ast.unparse(sig.returns)}"))
    return inserts


def _param_pairs(mine: ast.arguments, theirs: ast.arguments) -> list[tuple[ast.arg, ast.arg]]:
    positional = [*mine.posonlyargs, *mine.args]
    pairs = list(zip(positional, [*theirs.posonlyargs, *theirs.args], strict=False))
    keyword = {arg.arg: arg for arg in theirs.kwonlyargs}
    pairs += [(arg, keyword[arg.arg]) for arg in mine.kwonlyargs if arg.arg in keyword]
    if mine.vararg is not None and theirs.vararg is not None:
        pairs.append((mine.vararg, theirs.vararg))
    if mine.kwarg is not None and theirs.kwarg is not None:
        pairs.append((mine.kwarg, theirs.kwarg))
    return pairs


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def _header_colon(text: str, node: _Def) -> tuple[int, int] | None:
    """The 0-based (row, column) of the colon that ends the def's header."""
    lines = text.splitlines(keepends=True)
    start = (node.lineno, _char_col(lines[node.lineno - 1], node.col_offset))
    depth, seen_params = 0, False
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start < start or tok.type != tokenize.OP:
                continue
            if tok.string in "([{":
                depth, seen_params = depth + 1, True
            elif tok.string in ")]}":
                depth -= 1
            elif tok.string == ":" and depth == 0 and seen_params:
                return tok.start[0] - 1, tok.start[1]
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def _check_function(fn: str, sig: _Def) -> str:
    """The generated function that calls ``fn`` the way the signature says."""
    args = sig.args
    positional = [*args.posonlyargs, *args.args]
    required = positional[: len(positional) - len(args.defaults)]
    keywords = list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
    full = [_name(a) for a in positional]
    full += [f"*{_name(args.vararg)}"] if args.vararg else []
    full += [f"{a.arg}={_name(a)}" for a, _ in keywords]
    full += [f"**{_name(args.kwarg)}"] if args.kwarg else []
    minimal = [_name(a) for a in required]
    minimal += [f"{a.arg}={_name(a)}" for a, default in keywords if default is None]
    awaiting = "await " if isinstance(sig, ast.AsyncFunctionDef) else ""
    body = [f"    {awaiting}{fn}({', '.join(minimal)})"] if minimal != full else []
    call = f"{awaiting}{fn}({', '.join(full)})"
    returns = sig.returns
    if returns is None:
        result = "None"
        body.append(f"    {call}")
    elif isinstance(returns, ast.Constant) and returns.value is None:
        result = "None"
        body.append(f"    {_PREFIX}result: None = {call}  # type: ignore[func-returns-value]")
    else:
        result = ast.unparse(returns)
        body.append(f"    return {call}")
    prefix = "async def" if awaiting else "def"
    params = ", ".join(_params(args))
    return f"{prefix} {_PREFIX}signature_check({params}) -> {result}:\n" + "\n".join(body) + "\n"


def _params(args: ast.arguments) -> list[str]:
    params = [_param(a) for a in args.posonlyargs]
    params += ["/"] if args.posonlyargs else []
    params += [_param(a) for a in args.args]
    if args.vararg is not None:
        params.append(f"*{_param(args.vararg)}")
    elif args.kwonlyargs:
        params.append("*")
    params += [_param(a) for a in args.kwonlyargs]
    params += [f"**{_param(args.kwarg)}"] if args.kwarg is not None else []
    return params


def _name(arg: ast.arg) -> str:
    return f"{_PREFIX}p_{arg.arg}"


def _param(arg: ast.arg) -> str:
    if arg.annotation is None:
        return _name(arg)
    return f"{_name(arg)}: {ast.unparse(arg.annotation)}"
