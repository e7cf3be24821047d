"""Post gate results where reviewers read them: job summary, sticky comment, check run.

:func:`post` does three independent parts and reports each
(:class:`PostReport`); one failing does not stop the others, and none of them
raises: the gate's verdict never depends on posting (the CLI turns a failed
part into exit 2 only under ``--post-strict``).

* **Job summary**: the report appended to ``GITHUB_STEP_SUMMARY``.
* **Sticky comment**: the pull request's comments are listed and the first one
  that is *ours* is edited, else one is created. Ours means authored by the
  token's own identity (``GET /user``; an Actions token may not ask, and is
  ``github-actions[bot]``; ``GRADEBOX_GITHUB_LOGIN`` overrides) **and** starting
  with the marker line: a comment by anyone else, or a marker anywhere but the
  first line, is never edited. Creating is not retried blindly: after a failed
  create the comments are listed again first, so a create that went through
  behind a 5xx is edited, not doubled.
* **Check run** ``gradebox`` on the head commit: conclusion ``success``,
  ``failure`` or ``neutral`` (needs review), the report as its summary (cut
  with a note past 65,535 characters), annotations on the changed lines, 50 per
  request (the create, then updates that append).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gradebox.github.client import ClientOptions, GitHubClient
from gradebox.github.context import DEFAULT_LOGIN, GitHubContext
from gradebox.github.errors import ApiUnavailable, MissingPermission, PostError, redact
from gradebox.github.render import (
    SUMMARY_LIMIT,
    comment_body,
    conclusion,
    fit,
    is_ours,
    line_annotations,
    report,
    title,
)
from gradebox.patches import GateRow

__all__ = [
    "ANNOTATIONS_PER_REQUEST",
    "CHECK_NAME",
    "PartResult",
    "PostReport",
    "post",
    "post_from_env",
]

CHECK_NAME = "gradebox"
"""The check run's name."""
ANNOTATIONS_PER_REQUEST = 50
"""GitHub's limit per create or update of a check run."""
MAX_ANNOTATIONS = 1000
"""Annotations sent at most (20 requests); the rest are counted in the summary."""
_STEP_SUMMARY_LIMIT = 1_000_000  # GitHub: 1 MiB per step
_PR_WRITE = "pull-requests: write"
_CHECKS = "checks: write"

Part = Literal["summary", "comment", "check_run"]
Status = Literal["created", "updated", "written", "skipped", "failed"]


@dataclass(frozen=True, slots=True)
class PartResult:
    """How one part of posting went."""

    part: Part
    """``summary``, ``comment`` or ``check_run``."""
    status: Status
    """What happened."""
    detail: str = ""
    """Why it failed or was skipped, or what was made (never the token)."""
    requests: int = 0
    """Write requests made for it (check run: the create and each annotation update)."""


@dataclass(frozen=True, slots=True)
class PostReport:
    """Every part's result."""

    parts: tuple[PartResult, ...]
    """In order: summary, comment, check run."""

    @property
    def ok(self) -> bool:
        """No part failed."""
        return all(p.status != "failed" for p in self.parts)

    def part(self, name: Part) -> PartResult:
        """One part's result."""
        return next(p for p in self.parts if p.part == name)

    def lines(self) -> list[str]:
        """One line per part, for stderr."""
        return [f"github {p.part}: {p.status}" + (f": {p.detail}" if p.detail else "")
                for p in self.parts]  # fmt: skip


def post(
    rows: Sequence[GateRow],
    ctx: GitHubContext,
    options: ClientOptions | None = None,
    *,
    client: GitHubClient | None = None,
) -> PostReport:
    """Post ``rows`` as the module docstring says; never raises for a failed part.

    Args:
        rows: The gate's rows.
        ctx: Where to post.
        options: The client's retries and waits.
        client: A client to use (the caller closes it); by default one is opened.
    """
    parts = [_guard("summary", ctx, lambda: _summary(rows, ctx))]
    own = client or GitHubClient(ctx, options)
    try:
        if ctx.pr_number is None:
            parts.append(PartResult("comment", "skipped", "the event has no pull request"))
        else:
            parts.append(_guard("comment", ctx, lambda: _comment(own, ctx, rows)))
        parts.append(_guard("check_run", ctx, lambda: _check_run(own, ctx, rows)))
    finally:
        if client is None:
            own.close()
    return PostReport(tuple(parts))


def _guard(part: Part, ctx: GitHubContext, fn: Any) -> PartResult:
    """Run one part; any failure becomes a ``failed`` result (the gate's exit code stands)."""
    try:
        result: PartResult = fn()
    except PostError as exc:
        return PartResult(part, "failed", redact(str(exc), ctx.token))
    except OSError as exc:
        return PartResult(part, "failed", redact(f"{type(exc).__name__}: {exc}", ctx.token))
    except Exception as exc:
        return PartResult(part, "failed", f"unexpected {type(exc).__name__} (a gradebox bug)")
    return result


def _summary(rows: Sequence[GateRow], ctx: GitHubContext) -> PartResult:
    if ctx.step_summary is None:
        return PartResult("summary", "skipped", "GITHUB_STEP_SUMMARY is not set")
    text = _scrub(fit(report(rows, commit=ctx.head_sha), _STEP_SUMMARY_LIMIT), ctx)
    with ctx.step_summary.open("a", encoding="utf-8") as fh:
        fh.write(text + "\n")
    return PartResult("summary", "written")


def _scrub(text: str, ctx: GitHubContext) -> str:
    """Whatever a row says, the token never goes out in it."""
    return redact(text, ctx.token, limit=len(text))


def identity(client: GitHubClient, ctx: GitHubContext) -> str:
    """Whose comments are ours: the configured login, ``GET /user``, or the Actions bot."""
    if ctx.login:
        return ctx.login
    try:
        me = client.call("GET", "user", need="none (GET /user)")
    except MissingPermission as exc:
        if exc.status == 403:
            return DEFAULT_LOGIN
        raise
    login = me.get("login") if isinstance(me, dict) else None
    if not isinstance(login, str) or not login:
        raise ApiUnavailable("GET /user: no login in the reply")
    return login


def _comment(client: GitHubClient, ctx: GitHubContext, rows: Sequence[GateRow]) -> PartResult:
    me = identity(client, ctx)
    listing = f"repos/{ctx.repository}/issues/{ctx.pr_number}/comments"
    body = _scrub(comment_body(rows, commit=ctx.head_sha), ctx)
    attempts = 3
    for attempt in range(1, attempts + 1):
        mine = _find_comment(client, listing, me)
        if mine is not None:
            client.call("PATCH", f"repos/{ctx.repository}/issues/comments/{mine}",
                        need=_PR_WRITE, json={"body": body})  # fmt: skip
            return PartResult("comment", "updated", f"comment {mine}", 1)
        try:
            made = client.call("POST", listing, need=_PR_WRITE, json={"body": body}, retry=False)
        except ApiUnavailable:
            if attempt == attempts:
                raise
            client.backoff(attempt)
            continue  # it may have been created anyway: look again before another create
        made_id = made.get("id") if isinstance(made, dict) else None
        return PartResult("comment", "created", f"comment {made_id}", 1)
    raise AssertionError("unreachable")  # pragma: no cover


def _find_comment(client: GitHubClient, listing: str, me: str) -> int | None:
    for c in client.pages(listing, need="pull-requests: read"):
        user = c.get("user") if isinstance(c, dict) else None
        login = user.get("login") if isinstance(user, dict) else None
        if login == me and is_ours(c.get("body")) and isinstance(c.get("id"), int):
            return int(c["id"])
    return None


def _check_run(client: GitHubClient, ctx: GitHubContext, rows: Sequence[GateRow]) -> PartResult:
    notes = [a.scrubbed(ctx.token).to_json() for a in line_annotations(rows)]
    summary = report(rows, commit=ctx.head_sha)
    if len(notes) > MAX_ANNOTATIONS:
        summary += (f"\n{len(notes) - MAX_ANNOTATIONS} more annotation(s) not sent "
                    f"(at most {MAX_ANNOTATIONS}).\n")  # fmt: skip
        notes = notes[:MAX_ANNOTATIONS]
    summary = _scrub(fit(summary, SUMMARY_LIMIT), ctx)
    batches = [notes[i : i + ANNOTATIONS_PER_REQUEST]
               for i in range(0, len(notes), ANNOTATIONS_PER_REQUEST)] or [[]]  # fmt: skip
    head = title(rows)
    external_id = uuid.uuid4().hex
    first = {
        "name": CHECK_NAME, "head_sha": ctx.head_sha, "status": "completed",
        "conclusion": conclusion(rows), "external_id": external_id,
        "output": {"title": head, "summary": summary, "annotations": batches[0]},
    }  # fmt: skip
    run_id = _create_check_run(client, ctx, first, external_id)
    for batch in batches[1:]:
        output = {"title": head, "summary": summary, "annotations": batch}
        client.call("PATCH", f"repos/{ctx.repository}/check-runs/{run_id}", need=_CHECKS,
                    json={"output": output})  # fmt: skip
    detail = f"check run {run_id}: {conclusion(rows)}, {len(notes)} annotation(s)"
    return PartResult("check_run", "created", detail, len(batches))


def _create_check_run(
    client: GitHubClient, ctx: GitHubContext, body: dict[str, Any], external_id: str
) -> int:
    """Create once: after a failed try, look for our ``external_id`` before trying again."""
    attempts = 3
    for attempt in range(1, attempts + 1):
        try:
            made = client.call("POST", f"repos/{ctx.repository}/check-runs", need=_CHECKS,
                               json=body, retry=False)  # fmt: skip
        except ApiUnavailable:
            if attempt == attempts:
                raise
            client.backoff(attempt)
            found = _find_check_run(client, ctx, external_id)
            if found is not None:
                return found
            continue
        if not isinstance(made, dict) or not isinstance(made.get("id"), int):
            raise ApiUnavailable("POST check-runs: no id in the reply")
        return int(made["id"])
    raise AssertionError("unreachable")  # pragma: no cover


def _find_check_run(client: GitHubClient, ctx: GitHubContext, external_id: str) -> int | None:
    path = f"repos/{ctx.repository}/commits/{ctx.head_sha}/check-runs?check_name={CHECK_NAME}"
    found = client.call("GET", path, need="checks: read")
    runs = found.get("check_runs") if isinstance(found, dict) else None
    for run in runs if isinstance(runs, list) else []:
        if isinstance(run, dict) and run.get("external_id") == external_id:
            return int(run["id"])
    return None


def post_from_env(
    rows: Sequence[GateRow],
    env: Mapping[str, str],
    *,
    strict: bool = False,
    options: ClientOptions | None = None,
) -> list[str]:
    """Post from the Actions environment (``gradebox gate --post github``); lines to print.

    Args:
        rows: The gate's rows.
        env: The environment (``os.environ`` at the CLI).
        strict: A failed part raises instead of being reported (``--post-strict``).
        options: The client's retries and waits.

    Raises:
        PostError: Only with ``strict``: the context is unusable or a part failed.
    """
    try:
        ctx = GitHubContext.from_env(env)
    except PostError as exc:
        if strict:
            raise
        return [f"not posted to GitHub: {exc}"]
    result = post(rows, ctx, options)
    if strict and not result.ok:
        raise PostError("posting to GitHub failed (--post-strict): " + "; ".join(result.lines()))
    return result.lines()
