"""A task's own static settings: a policy of its own and rule ids it legitimately needs.

Read from a task's ``"static"`` object, in ``public.jsonl`` for the CLI and in
``PUT /v1/tasks/{task}`` for the service, so both grade a task the same way. A
task that asks for an MD5 digest allows ``B324``: the finding stays on the row
but never decides the verdict.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from static.lockfiles import LockfileError, read_lockfile
from static.policy import Policy

__all__ = ["KEYS", "LOCKFILE_NAMES", "TaskStatic", "allowing", "task_static"]

LOCKFILE_NAMES = ("requirements.txt", "uv.lock", "poetry.lock", "pylock.toml")
"""Names a task's lockfile may be given under (they choose its format)."""

KEYS = ("policy", "allow_rules", "lockfile")
"""The fields of a task's ``static`` object."""
_RULE = re.compile(r"^[A-Za-z0-9*?_\-]{1,40}$")
# A lockfile given as text has no folder: an include would read a server file.
_INCLUDE = re.compile(r"^\s*(-r|-c|--requirement|--constraint)\b", re.MULTILINE)
_MAX_LOCKFILE = 1024 * 1024


@dataclass(frozen=True, slots=True)
class TaskStatic:
    """A task's static settings (``"static"`` of a task body); empty means the server's."""

    policy: Policy | None = None
    """Replaces the server's policy for this task; ``None`` keeps it."""
    allow_rules: tuple[str, ...] = ()
    """Rule ids (or patterns) whose findings never decide the effect for this task."""
    pins: dict[str, str] | None = None
    """``{distribution: version}`` from the task's lockfile; ``None`` keeps the server's."""


def task_static(stored: Mapping[str, Any]) -> TaskStatic:
    """Build the settings from their stored (or body) form.

    Raises:
        ValueError: ``"<field>: <what is wrong>"``.
    """
    policy = None
    if "policy" in stored:
        if not isinstance(stored["policy"], dict):
            raise ValueError("policy: must be an object with fail_on / review_on")
        try:
            policy = Policy.from_mapping(stored["policy"])
        except ValueError as exc:
            raise ValueError(f"policy: {exc}") from exc
    allow = stored.get("allow_rules", [])
    if not isinstance(allow, list) or not all(isinstance(r, str) and _RULE.match(r) for r in allow):
        raise ValueError("allow_rules: must be a list of rule ids such as B324 (or patterns)")
    pins = _pins(stored["lockfile"]) if "lockfile" in stored else None
    return TaskStatic(policy, tuple(allow), pins)


def _pins(lockfile: Any) -> dict[str, str]:
    if (
        not isinstance(lockfile, dict)
        or set(lockfile) != {"name", "content"}
        or lockfile["name"] not in LOCKFILE_NAMES
        or not isinstance(lockfile["content"], str)
    ):
        raise ValueError(
            "lockfile: must be {name, content}, name one of " + ", ".join(LOCKFILE_NAMES)
        )
    content: str = lockfile["content"]
    if len(content) > _MAX_LOCKFILE:
        raise ValueError(f"lockfile: longer than {_MAX_LOCKFILE} characters")
    if _INCLUDE.search(content):
        raise ValueError("lockfile: -r / -c includes are not allowed in a registered lockfile")
    with tempfile.TemporaryDirectory(prefix="gradebox-lock-") as folder:
        path = Path(folder) / lockfile["name"]
        path.write_text(content, encoding="utf-8")
        try:
            return read_lockfile(path)
        except LockfileError as exc:
            raise ValueError(f"lockfile: {str(exc).replace(folder + '/', '')}") from exc


def allowing(policy: Policy, rules: Sequence[str]) -> Policy:
    """``policy`` with ``rules`` excluded from every selector (they annotate, never decide)."""
    if not rules:
        return policy

    def widen(selectors: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(
            dataclasses.replace(s, except_rules=(*s.except_rules, *rules)) for s in selectors
        )

    return Policy(fail_on=widen(policy.fail_on), review_on=widen(policy.review_on))
