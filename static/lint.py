"""Lint layer: ruff over candidate files, with a rule set chosen for generated code.

One ruff process checks a whole batch (``ruff check --output-format json`` over
the list of files); results are split back per file. ruff runs ``--isolated``
(no configuration file is read, the selection below is all there is),
``--no-cache`` and ``--ignore-noqa``: a candidate's ``# noqa`` or
``# ruff: noqa`` does not hide a finding.

Rule groups (:class:`LintConfig` ``select_groups``), each reportable on its own:

- ``bugs`` (default on): correctness and likely bugs. Pyflakes (``F``), syntax
  and I/O errors (``E9``, ruff's ``invalid-syntax``), bare ``except`` (``E722``),
  flake8-bugbear (``B``, without the style-only ``B009``, ``B010``, ``B028``,
  ``B904``, ``B905``), pylint errors and warnings (``PLE``, ``PLW``), comparisons
  that are always the same (``PLR0124``, ``PLR0133``), asyncio mistakes
  (``ASYNC``, ``RUF006``), mutable class and dataclass defaults (``RUF008``,
  ``RUF009``, ``RUF012``), and a few more bug patterns (``RUF016`` to ``RUF024``,
  ``PIE794``, ``PIE796``, ``T10``). Pure style (``E``/``W`` layout, ``I``,
  ``UP``, ``SIM``, naming) is off. Security rules (``S``) are left to bandit.
- ``complexity``: ``C901`` above ``max_complexity``. Off by default because the
  metrics layer already reports complexity (``GBX301``) with the numbers.
- ``docs``: pydocstyle (``D``), Google convention, without ``D100``/``D104``
  (a candidate is a snippet, not a module). Off by default.
- ``annotations``: ``ANN``, without ``ANN401`` (``Any`` is often the task's own
  type). Off by default.

Severity (:data:`SEVERITY`, the longest matching prefix wins):

- ``high``: the code cannot run as written: ``invalid-syntax``, ``E9``, ``F7``
  (``break`` outside a loop, ...), ``F821`` to ``F823`` (undefined names), ``PLE``;
- ``medium``: likely bugs: the rest of ``F``, ``E722``, ``B``, ``PLW``, ``PLR``,
  ``RUF``, ``ASYNC``, ``PIE``, ``T10``;
- ``low``: dead code (``F401``, ``F541``, ``F811``, ``F841``), complexity
  (``C901``), and any extra rule a task set selects;
- ``info``: docstrings (``D``) and annotations (``ANN``).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from static.config import GROUPS, LintConfig, LintGroup, StaticConfig
from static.findings import Finding, Severity, ToolError
from static.tools import locate

__all__ = ["GROUPS", "SEVERITY", "LintConfig", "LintGroup", "check", "find_tool", "severity"]

SEVERITY: Mapping[str, Severity] = {
    "invalid-syntax": "high",
    "E9": "high",
    "F7": "high",
    "F821": "high",
    "F822": "high",
    "F823": "high",
    "PLE": "high",
    "F": "medium",
    "E722": "medium",
    "B": "medium",
    "PLW": "medium",
    "PLR": "medium",
    "RUF": "medium",
    "ASYNC": "medium",
    "PIE": "medium",
    "T10": "medium",
    "F401": "low",
    "F541": "low",
    "F811": "low",
    "F841": "low",
    "C901": "low",
    "D": "info",
    "ANN": "info",
}
"""Rule-id prefix -> severity; the longest matching prefix wins, ``low`` if none."""

_ENV = {"LC_ALL": "C.UTF-8", "NO_COLOR": "1"}


def find_tool(config: StaticConfig) -> str:
    """Locate the ruff binary (``config.ruff`` wins; see :func:`static.tools.locate`).

    Raises:
        ToolError: ruff is not installed.
    """
    return locate("ruff", config.ruff)


def check(files: Sequence[Path], config: StaticConfig) -> dict[Path, list[Finding]]:
    """Lint candidate files with one ruff process.

    Args:
        files: Candidate files; each is one candidate.
        config: ``config.lint`` selects the rules; ``config.timeout_s`` bounds the run.

    Returns:
        Findings per file (every given file is a key), in ruff's order.

    Raises:
        ToolError: ruff is missing, failed, timed out, or printed something unparseable.
    """
    if not files:
        return {}
    if not config.lint.select_groups and not config.lint.extend_select:
        return {path: [] for path in files}
    argv = [find_tool(config), *_options(config.lint), *map(str, files)]
    try:
        proc = subprocess.run(
            argv, capture_output=True, timeout=config.timeout_s, env=_ENV, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolError(f"ruff did not run: {exc}") from exc
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip()[-500:]
        raise ToolError(f"ruff failed with exit code {proc.returncode}: {tail}")
    return _split(proc.stdout, files)


def _options(lint: LintConfig) -> list[str]:
    select = [code for group in sorted(lint.select_groups) for code in GROUPS[group][0]]
    select += lint.extend_select
    ignore = [code for group in sorted(lint.select_groups) for code in GROUPS[group][1]]
    ignore += lint.ignore
    options = [
        "check",
        "--output-format=json",
        "--isolated",
        "--no-cache",
        "--ignore-noqa",
        "--exit-zero",
        "--target-version=py311",
        "--config=lint.pydocstyle.convention='google'",
        f"--config=lint.mccabe.max-complexity={lint.max_complexity}",
        f"--select={','.join(select)}",
    ]
    if ignore:
        options.append(f"--ignore={','.join(ignore)}")
    return options


def _split(stdout: bytes, files: Sequence[Path]) -> dict[Path, list[Finding]]:
    by_path = {path.resolve(): path for path in files}
    result: dict[Path, list[Finding]] = {path: [] for path in files}
    try:
        items = json.loads(stdout)
        if not isinstance(items, list):
            raise TypeError(f"expected a JSON list, got {type(items).__name__}")
        for item in items:
            path = by_path[Path(item["filename"]).resolve()]
            result[path].append(_finding(item))
    except (ValueError, TypeError, KeyError) as exc:
        shown = stdout[:200].decode(errors="replace")
        raise ToolError(f"ruff printed something that is not its JSON: {shown!r}") from exc
    return result


def _finding(item: dict[str, Any]) -> Finding:
    code, message = item["code"], item["message"]
    row, column = item["location"]["row"], item["location"]["column"]
    if not (isinstance(code, str) and isinstance(message, str)):
        raise TypeError("code and message must be strings")
    if not (isinstance(row, int) and isinstance(column, int)):
        raise TypeError("location must be integers")
    return Finding("lint", code, severity(code), row, column, message)


def severity(code: str) -> Severity:
    """The severity of a ruff rule id under :data:`SEVERITY`.

    Args:
        code: A ruff rule id (``F821``) or ``invalid-syntax``.

    Returns:
        The severity of the longest matching prefix, ``low`` when none matches.
    """
    prefixes = [prefix for prefix in SEVERITY if code.startswith(prefix)]
    return SEVERITY[max(prefixes, key=len)] if prefixes else "low"
