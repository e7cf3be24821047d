"""Security layer: bandit over candidate files.

Batch mode (:func:`check`) runs one ``bandit -f json`` process over a list of
files; bandit exits 1 when it finds issues, which is not a failure. The warm
single-candidate mode (:class:`InProcess`) calls bandit's own API in this
process: bandit parses the code with :mod:`ast` and never runs it. The warm
batch mode (:class:`Worker`) calls the same API in a long-lived child process,
for a grading run's many batches: starting bandit costs ~150 ms of CPU, scanning
a small file ~0.3 ms, so a process per batch of 64 costs most of the stage. All
modes pass ``--ignore-nosec``: a candidate's ``# nosec`` does not hide a finding.

What it catches, by bandit id: shell injection (``B602``, ``B605``, ``B604``),
SQL built by string formatting (``B608``), hard-coded secrets (``B105`` to ``B107``),
unsafe deserialization (``B301``, ``B403``, ``B506``), disabled certificate
checks (``B501``, ``B323``), ``eval``/``exec`` (``B307``, ``B102``), weak hashes
(``B324``) and the rest of bandit's default set.

Skipped by default (:class:`SecurityConfig` ``skip``): ``B101`` (``assert``; generated
code and its tests use it legitimately) and ``B311`` (``random``; a generated
shuffle is not a security token).

Severity: bandit's own (``LOW``/``MEDIUM``/``HIGH`` -> ``low``/``medium``/``high``),
except that a ``HIGH`` with ``LOW`` confidence is ``medium``: a guess never fails a
candidate under the default policy. The confidence is kept in the message.

A file that bandit cannot parse is skipped without findings when the code does
not compile either (the lint layer reports the syntax error). Every other file
that bandit does not scan -- one it cannot parse although it compiles, one it
raised on, one it left out without saying -- is that file's failure only
(:class:`static.findings.FileErrors`), never a clean result.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from static.config import SecurityConfig, StaticConfig
from static.findings import FileErrors, Finding, Severity, ToolError
from static.source import uncompilable
from static.tools import TOOL_ENV, ToolWorker, locate

__all__ = [
    "WORKER_REQUESTS",
    "InProcess",
    "SecurityConfig",
    "Worker",
    "check",
    "find_tool",
    "to_severity",
]

_SEVERITY: dict[str, Severity] = {"LOW": "low", "MEDIUM": "medium", "HIGH": "high"}
_SYNTAX = "syntax error while parsing AST from file"
_WORKER = (
    "import json, sys\n"
    "from bandit.core import config, manager\n"
    "skip, replies = json.loads(sys.argv[1]), sys.stdout\n"
    "sys.stdout = sys.stderr\n"
    "conf = config.BanditConfig()\n"
    "for line in sys.stdin:\n"
    "    try:\n"
    "        m = manager.BanditManager(conf, 'file', quiet=True, ignore_nosec=True,\n"
    "                                  profile={'include': set(), 'exclude': set(skip)})\n"
    "        m.discover_files(json.loads(line))\n"
    "        m.run_tests()\n"
    "        reply = {'issues': [[i.fname, i.test_id, i.severity, i.confidence, i.lineno,\n"
    "                             i.col_offset, i.text] for i in m.get_issue_list()],\n"
    "                 'skipped': [[str(n), str(r)] for n, r in m.get_skipped()],\n"
    "                 'scanned': [str(n) for n in m.metrics.data if n != '_totals']}\n"
    "    except Exception as exc:\n"
    "        reply = {'error': f'{type(exc).__name__}: {exc}'[:500]}\n"
    "    replies.write(json.dumps(reply) + '\\n')\n"
    "    replies.flush()\n"
)

WORKER_REQUESTS = 1000
"""A :class:`Worker` is replaced after this many requests."""


def find_tool(config: StaticConfig) -> str:
    """Locate the bandit binary (``config.bandit`` wins; see :func:`static.tools.locate`).

    Raises:
        ToolError: bandit is not installed.
    """
    return locate("bandit", config.bandit)


def check(files: Sequence[Path], config: StaticConfig) -> dict[Path, list[Finding]]:
    """Scan candidate files with one bandit process.

    Args:
        files: Candidate files; each is one candidate.
        config: ``config.security`` selects the tests; ``config.timeout_s`` bounds the run.

    Returns:
        Findings per file (every given file is a key).

    Raises:
        ToolError: bandit is missing, failed, timed out or printed something unparseable.
        FileErrors: bandit did not scan some files (see the module docstring).
    """
    if not files:
        return {}
    argv = [find_tool(config), "-f", "json", "-q", "--ignore-nosec"]
    if config.security.skip:
        argv += ["-s", ",".join(config.security.skip)]
    try:
        proc = subprocess.run(
            [*argv, *map(str, files)],
            capture_output=True,
            timeout=config.timeout_s,
            env=TOOL_ENV,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolError(f"bandit did not run: {exc}") from exc
    if proc.returncode not in (0, 1):
        tail = proc.stderr.decode(errors="replace").strip()[-500:]
        raise ToolError(f"bandit failed with exit code {proc.returncode}: {tail}")
    try:
        report = json.loads(proc.stdout)
        skipped = [(str(e["filename"]), str(e["reason"])) for e in report["errors"]]
        issues = [_from_json(item) for item in report["results"]]
        scanned = [str(name) for name in report["metrics"] if name != "_totals"]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        shown = proc.stdout[:200].decode(errors="replace")
        raise ToolError(f"bandit printed something that is not its JSON: {shown!r}") from exc
    return _split(files, _Report(issues, skipped, scanned), config.timeout_s)


class InProcess:
    """bandit through its Python API, for one candidate at a time on a warm service.

    Loading bandit's plugins costs a few hundred milliseconds once; each
    :meth:`check` then costs what scanning the file costs. Not thread-safe:
    use one instance per thread.
    """

    def __init__(self, config: StaticConfig) -> None:
        """Load bandit and its plugins.

        Args:
            config: ``config.security`` selects the tests.

        Raises:
            ToolError: bandit is not importable here.
        """
        try:
            # bandit is optional and untyped: loaded on demand, used through Any.
            self._manager: Any = importlib.import_module("bandit.core.manager")
            self._bandit_config: Any = importlib.import_module("bandit.core.config").BanditConfig()
        except ImportError as exc:
            raise ToolError("bandit is not importable: install it (`pip install bandit`)") from exc
        self._profile = {"include": set[str](), "exclude": set(config.security.skip)}
        self._timeout_s = config.timeout_s

    def check(self, files: Sequence[Path]) -> dict[Path, list[Finding]]:
        """Scan candidate files in this process.

        Args:
            files: Candidate files; each is one candidate.

        Returns:
            Findings per file (every given file is a key).

        Raises:
            ToolError: bandit raised.
            FileErrors: bandit did not scan some files (see the module docstring).
        """
        try:
            manager = self._manager.BanditManager(
                self._bandit_config, "file", quiet=True, ignore_nosec=True, profile=self._profile
            )
            manager.discover_files([str(path) for path in files])
            manager.run_tests()
            issues = [_from_issue(issue) for issue in manager.get_issue_list()]
            skipped = [(str(name), str(reason)) for name, reason in manager.get_skipped()]
            scanned = [str(name) for name in manager.metrics.data if name != "_totals"]
        except Exception as exc:  # bandit's own bugs must not look like findings
            raise ToolError(f"bandit raised {type(exc).__name__}: {exc}") from exc
        return _split(files, _Report(issues, skipped, scanned), self._timeout_s)


class Worker(ToolWorker[dict[str, Any]]):
    """bandit's API in a long-lived child process, for the many batches of a grading run.

    The same scan as :class:`InProcess` (the same manager, profile and
    ``ignore_nosec``), so the same findings as :func:`check`; in a child so that
    it runs on another core than the grader and its :mod:`ast` parses never meet
    the grader's (see :mod:`static.source`). Recycled every
    :data:`WORKER_REQUESTS` requests and restarted once if it dies; it exits by
    itself when this process goes away (:class:`static.tools.ToolWorker`). Not
    thread-safe: one per thread.
    """

    tool = "bandit"

    def __init__(self, config: StaticConfig) -> None:
        """Start the worker (bandit loads its plugins there, ~0.2 s).

        Args:
            config: ``config.security`` selects the tests; ``config.timeout_s`` bounds requests.

        Raises:
            ToolError: the worker did not start.
        """
        self._config = config
        super().__init__(config.timeout_s)

    def check(self, files: Sequence[Path]) -> dict[Path, list[Finding]]:
        """Scan candidate files in the worker.

        Args:
            files: Candidate files; each is one candidate.

        Returns:
            Findings per file (every given file is a key).

        Raises:
            ToolError: the worker failed twice in a row, or bandit raised.
            FileErrors: bandit did not scan some files (see the module docstring).
        """
        if not files:
            return {}
        self._recycle_if_due()
        reply = self._request(files)
        if "error" in reply:
            raise ToolError(f"bandit raised {reply['error']}")
        try:
            issues = [(str(i[0]), _finding(*i[1:])) for i in reply["issues"]]
            skipped = [(str(name), str(reason)) for name, reason in reply["skipped"]]
            scanned = [str(name) for name in reply["scanned"]]
        except (ValueError, TypeError, KeyError) as exc:
            raise ToolError(f"the bandit worker replied something unexpected: {exc}") from exc
        return _split(files, _Report(issues, skipped, scanned), self._config.timeout_s)

    def _argv(self) -> list[str]:
        return [sys.executable, "-I", "-c", _WORKER, json.dumps(list(self._config.security.skip))]

    def _limits(self) -> tuple[int, int | None]:
        return WORKER_REQUESTS, None

    def _decode(self, reply: dict[str, Any]) -> dict[str, Any]:
        return reply


@dataclass(frozen=True, slots=True)
class _Report:
    issues: list[tuple[str, Finding]]  # (file name, finding)
    skipped: list[tuple[str, str]]  # (file name, reason)
    scanned: list[str]  # file names bandit has metrics for


def _split(files: Sequence[Path], report: _Report, timeout_s: float) -> dict[Path, list[Finding]]:
    by_path = {path.resolve(): path for path in files}

    def given(name: str) -> Path:
        path = by_path.get(Path(name).resolve())
        if path is None:
            raise ToolError(f"bandit reported a file it was not given: {name!r}")
        return path

    result: dict[Path, list[Finding]] = {path: [] for path in files}
    for name, finding in report.issues:
        result[given(name)].append(finding)
    for findings in result.values():
        findings.sort(key=lambda f: (f.line, f.col, f.rule))
    failed = _not_scanned(files, [(given(n), r) for n, r in report.skipped], timeout_s)
    seen = {given(name) for name in report.scanned}
    failed.update((p, f"bandit did not scan {p.name}") for p in files if p not in seen)
    if failed:
        raise FileErrors({p: f for p, f in result.items() if p not in failed}, failed)
    return result


def _not_scanned(
    files: Sequence[Path], skipped: list[tuple[Path, str]], timeout_s: float
) -> dict[Path, str]:
    """The skipped files that bandit failed on: all but those that really do not compile."""
    unparsed = [path for path, reason in skipped if reason == _SYNTAX]
    broken = uncompilable(unparsed, timeout_s=timeout_s)
    failed = {
        path: f"bandit could not parse {path.name}, which compiles"
        for path in unparsed
        if path not in broken
    }
    failed.update(
        (path, f"bandit skipped {path.name}: {reason}")
        for path, reason in skipped
        if reason != _SYNTAX
    )
    return failed


def _from_json(item: dict[str, Any]) -> tuple[str, Finding]:
    return str(item["filename"]), _finding(
        item["test_id"],
        item["issue_severity"],
        item["issue_confidence"],
        item["line_number"],
        item["col_offset"],
        item["issue_text"],
    )


def _from_issue(issue: Any) -> tuple[str, Finding]:
    return str(issue.fname), _finding(
        issue.test_id, issue.severity, issue.confidence, issue.lineno, issue.col_offset, issue.text
    )


def _finding(
    test_id: object, severity: object, confidence: object, line: object, col: object, text: object
) -> Finding:
    if not (isinstance(test_id, str) and isinstance(text, str)):
        raise TypeError("test id and text must be strings")
    if not (isinstance(line, int) and isinstance(col, int)):
        raise TypeError("line and column must be integers")
    if not (isinstance(severity, str) and isinstance(confidence, str)):
        raise TypeError("severity and confidence must be strings")
    message = f"{text} (confidence: {confidence.lower()})"
    return Finding("security", test_id, to_severity(severity, confidence), line, col + 1, message)


def to_severity(severity: str, confidence: str) -> Severity:
    """Our severity for bandit's severity and confidence.

    Args:
        severity: bandit's ``LOW``, ``MEDIUM`` or ``HIGH``.
        confidence: bandit's ``LOW``, ``MEDIUM`` or ``HIGH``.

    Returns:
        bandit's severity in lower case, except ``HIGH`` with ``LOW`` confidence: ``medium``.

    Raises:
        ValueError: a value bandit does not use.
    """
    if severity not in _SEVERITY or confidence not in _SEVERITY:
        raise ValueError(f"unknown severity {severity!r} or confidence {confidence!r}")
    ours = _SEVERITY[severity]
    return "medium" if ours == "high" and confidence == "LOW" else ours
