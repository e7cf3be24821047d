"""The composite Action's script: the event and inputs in, ``gradebox gate`` run, outputs back.

``action.yml`` runs ``python -m gradebox.github.action --exit-zero`` with its
inputs as ``INPUT_*`` variables (:data:`INPUTS`) beside the standard Actions
environment. The script:

1. reads the event (``GITHUB_EVENT_PATH``): base = the ``base`` input, else the
   pull request's ``base.sha``; head = the ``head`` input, else the pull
   request's ``head.sha``, else ``GITHUB_SHA``;
2. takes the intent from the ``intent`` input: ``pr-body`` (the default: the
   pull request's title and body), ``none``, or ``@PATH``, the repository's
   file at the head revision (read from git's objects, never the checkout: a
   link is not followed);
3. takes the rules from the base revision or the workflow, never from the
   pull request's checkout (``GITHUB_WORKSPACE`` holds the head, which the PR
   wrote): ``policy: PATH`` is ``--static-policy base:PATH``, ``policy-toml``
   the policy's TOML inline (``--static-policy-toml``), ``fail-to-pass`` and
   ``pass-to-pass`` ids inline (commas or lines) or ``@PATH`` read at base
   (``@base:PATH``); ``--rules-origin workflow`` labels the inline ones on the
   row; ``args`` may not set a rule;
4. runs ``gradebox gate --repo $GITHUB_WORKSPACE --base B --head H`` writing
   ``gate.jsonl``, ``gate.sarif``, ``junit.xml``, ``comment.md`` and
   ``report.json`` to the output directory, with ``--post github`` when the
   ``post`` input is ``github``;
5. writes ``exit-code``, ``verdict``, ``sarif`` and ``results`` to
   ``GITHUB_OUTPUT``, and exits with the gate's code (0 with ``--exit-zero``:
   the Action uploads the SARIF first and fails the job in its last step).

The PR body is written to a file and passed as ``--intent @FILE``: it never
becomes part of a command line or a shell string.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradebox.patches.rules import BASE
from gradebox.patches.tree import GitError, ObjectStore, PathRefused

__all__ = ["INPUTS", "ActionPlan", "main", "plan"]

INPUTS = {
    "base": "INPUT_BASE",
    "head": "INPUT_HEAD",
    "intent": "INPUT_INTENT",
    "lockfile": "INPUT_LOCKFILE",
    "policy": "INPUT_POLICY",
    "policy-toml": "INPUT_POLICY_TOML",
    "filter-mode": "INPUT_FILTER_MODE",
    "fail-to-pass": "INPUT_FAIL_TO_PASS",
    "pass-to-pass": "INPUT_PASS_TO_PASS",
    "post": "INPUT_POST",
    "output-dir": "INPUT_OUTPUT_DIR",
    "args": "INPUT_ARGS",
}
"""The Action's inputs and the variables ``action.yml`` passes them in."""
_MAX_INTENT = 64 * 1024
_FILTER_MODES = ("added", "diff_context", "file", "nofilter")
_RULE_FLAGS = frozenset(
    {
        "--static-policy",
        "--static-policy-toml",
        "--fail-to-pass",
        "--pass-to-pass",
        "--rules-origin",
    }
)


class ActionError(Exception):
    """The inputs or the event do not make a gate (exit 2, said on stderr)."""


@dataclass(frozen=True, slots=True)
class ActionPlan:
    """The gate command to run and where its outputs go."""

    argv: tuple[str, ...]
    """``gradebox gate ...`` as an argument list."""
    out_dir: Path
    """Where gate.jsonl, gate.sarif, junit.xml, comment.md, report.json go."""


def _input(env: Mapping[str, str], name: str) -> str:
    return env.get(INPUTS[name], "").strip()


def _event(env: Mapping[str, str]) -> dict[str, Any]:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeError, json.JSONDecodeError) as exc:
        raise ActionError(f"cannot read the event file: {exc}") from exc
    return data if isinstance(data, dict) else {}


def plan(env: Mapping[str, str]) -> ActionPlan:
    """The gate to run for this event and these inputs.

    Raises:
        ActionError: No base revision, or an input that is not allowed.
    """
    event = _event(env)
    pr = event.get("pull_request") if isinstance(event.get("pull_request"), dict) else {}
    assert isinstance(pr, dict)  # noqa: S101 - narrowed above
    base = _input(env, "base") or str((pr.get("base") or {}).get("sha") or "")
    head = _input(env, "head") or str((pr.get("head") or {}).get("sha") or "")
    head = head or env.get("GITHUB_SHA", "")
    if not base or not head:
        raise ActionError("no base or head revision: give the `base` input outside pull requests")
    workspace = Path(env.get("GITHUB_WORKSPACE") or ".").resolve()
    out_dir = Path(_input(env, "output-dir") or Path(env.get("RUNNER_TEMP") or ".") / "gradebox")
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-c", "from gradebox.cli import main; main()", "gate",
            "--repo", str(workspace), "--base", base, "--head", head,
            "--out", str(out_dir / "gate.jsonl"), "--sarif", str(out_dir / "gate.sarif"),
            "--junit", str(out_dir / "junit.xml"), "--comment", str(out_dir / "comment.md"),
            "--report", str(out_dir / "report.json")]  # fmt: skip
    argv += _intent(_input(env, "intent") or "pr-body", pr, workspace, out_dir, head)
    mode = _input(env, "filter-mode") or "added"
    if mode not in _FILTER_MODES:
        raise ActionError(f"filter-mode must be one of {', '.join(_FILTER_MODES)}")
    argv += ["--filter-mode", mode]
    if value := _input(env, "lockfile"):
        argv += ["--lockfile", value]
    argv += _rules(env)
    post = _input(env, "post") or "github"
    if post not in ("github", "none"):
        raise ActionError("post must be github or none")
    if post == "github":
        argv += ["--post", "github"]
    try:
        extra = shlex.split(_input(env, "args"))
    except ValueError as exc:
        raise ActionError(f"args: {exc}") from exc
    if ruled := sorted({a.split("=", 1)[0] for a in extra} & _RULE_FLAGS):
        raise ActionError(
            f"args may not set a rule ({', '.join(ruled)}): give the policy, policy-toml, "
            "fail-to-pass and pass-to-pass inputs, read at the base revision or from the workflow"
        )
    argv += extra
    return ActionPlan(tuple(argv), out_dir)


def _rules(env: Mapping[str, str]) -> list[str]:
    """The gate's rule options: files at the base revision, or inline from the workflow."""
    out = ["--rules-origin", "workflow"]
    policy, toml = _input(env, "policy"), _input(env, "policy-toml")
    if policy and toml:
        raise ActionError("give one of policy (a file read at base) and policy-toml")
    if policy:
        out += ["--static-policy", BASE + policy.removeprefix(BASE)]
    elif toml:
        out += ["--static-policy-toml", toml]
    for name in ("fail-to-pass", "pass-to-pass"):
        value = _input(env, name)
        if value == "auto" and name == "pass-to-pass":
            out += ["--pass-to-pass", "auto"]
        elif value.startswith("@"):
            out += [f"--{name}", "@" + BASE + value[1:].removeprefix(BASE)]
        elif value:
            ids = [i.strip() for line in value.splitlines() for i in line.split(",")]
            out += [f"--{name}", ",".join(i for i in ids if i)]
    return out


def _intent(
    source: str, pr: Mapping[str, Any], workspace: Path, out_dir: Path, head: str
) -> list[str]:
    if source == "none":
        return []
    if source.startswith("@"):
        text = _at_head(workspace, head, source[1:])
    elif source == "pr-body":
        title, body = str(pr.get("title") or ""), str(pr.get("body") or "")
        text = (title + "\n\n" + body).strip()
    else:
        raise ActionError("intent must be pr-body, none or @PATH")
    if not text:
        return []
    path = out_dir / "intent.md"
    path.write_text(text[:_MAX_INTENT], encoding="utf-8")
    return ["--intent", f"@{path}"]


def _at_head(workspace: Path, head: str, path: str) -> str:
    """A file of the repository at ``head``, from git's objects (a link is not a file)."""
    try:
        store = ObjectStore(workspace)
        data = store.read(store.commit(head), path)
    except (GitError, PathRefused) as exc:
        raise ActionError(f"intent @{path}: {exc}") from exc
    if data is None:
        raise ActionError(f"intent @{path}: not a file at the head revision")
    return data.decode("utf-8", "replace")


def _verdict(results: Path) -> str:
    try:
        rows = [json.loads(x) for x in results.read_text(encoding="utf-8").splitlines() if x]
    except (OSError, ValueError):
        return "error"
    verdicts = {r.get("verdict") for r in rows if isinstance(r, dict)}
    for v in ("fail", "needs_review", "pass"):
        if v in verdicts:
            return v
    return "error"


def _outputs(env: Mapping[str, str], values: dict[str, str]) -> None:
    target = env.get("GITHUB_OUTPUT")
    if not target:
        return
    with Path(target).open("a", encoding="utf-8") as fh:
        for key, value in values.items():
            fh.write(f"{key}={value}\n")


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run the Action's gate; see the module docstring.

    Args:
        argv: ``--exit-zero`` or nothing.
        env: The environment (default ``os.environ``).

    Returns:
        The gate's exit code (0 with ``--exit-zero``), 2 when no gate could be planned.
    """
    env = os.environ if env is None else env
    exit_zero = "--exit-zero" in (sys.argv[1:] if argv is None else argv)
    try:
        todo = plan(env)
    except (ActionError, OSError) as exc:
        print(f"gradebox action: {exc}", file=sys.stderr)
        _outputs(env, {"exit-code": "2", "verdict": "error"})
        return 0 if exit_zero else 2
    code = subprocess.run(todo.argv, check=False, env=dict(env)).returncode
    results = todo.out_dir / "gate.jsonl"
    sarif = todo.out_dir / "gate.sarif"
    _outputs(env, {
        "exit-code": str(code), "verdict": _verdict(results),
        "sarif": str(sarif) if sarif.exists() else "", "results": str(results),
    })  # fmt: skip
    return 0 if exit_zero else code


if __name__ == "__main__":
    sys.exit(main())
