"""Where a gate is posted: the standard GitHub Actions environment, read once.

:meth:`GitHubContext.from_env` reads ``GITHUB_API_URL``, ``GITHUB_TOKEN``,
``GITHUB_REPOSITORY``, ``GITHUB_EVENT_PATH``, ``GITHUB_SHA`` and
``GITHUB_STEP_SUMMARY`` (the CLI passes ``os.environ``; nothing else reads the
environment). From the event file it takes the pull request's number and head
commit (``pull_request`` and ``pull_request_target`` events, or an
``issue_comment`` on a pull request); other events have no pull request and get
a check run and a job summary only.

The token is sent to ``GITHUB_API_URL`` only, which must be ``https://`` (plain
``http://`` only to a loopback address, for a local server); it is kept out of
``repr`` and every message.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gradebox.github.errors import NoContext

__all__ = ["DEFAULT_LOGIN", "GitHubContext", "check_api_url"]

DEFAULT_LOGIN = "github-actions[bot]"
"""Who ``GITHUB_TOKEN`` comments as (``GET /user`` is refused to an Actions token)."""

_REPO = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
_MAX_EVENT_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class GitHubContext:
    """One posting target: repository, pull request, commit, and how to reach the API."""

    api_url: str
    """The REST API's root, without a trailing slash."""
    token: str = field(repr=False)
    """The token (``GITHUB_TOKEN``); never in ``repr``, a message or a file."""
    repository: str
    """``owner/name``."""
    head_sha: str
    """The commit the check run is for: the PR's head, else ``GITHUB_SHA``."""
    pr_number: int | None = None
    """The pull request, or ``None`` (no sticky comment then)."""
    step_summary: Path | None = None
    """``GITHUB_STEP_SUMMARY``: the job summary file, appended to."""
    login: str | None = None
    """Whose comments are ours (``GRADEBOX_GITHUB_LOGIN``); ``None``: ask ``GET /user``,
    falling back to :data:`DEFAULT_LOGIN`."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GitHubContext:
        """Read the Actions environment.

        Args:
            env: The environment (``os.environ`` at the CLI).

        Raises:
            NoContext: A variable is missing or wrong, or the event file cannot be read.
        """
        token = env.get("GITHUB_TOKEN", "")
        if not token.strip():
            raise NoContext("GITHUB_TOKEN is not set: pass it to the step as an env variable")
        api_url = check_api_url(env.get("GITHUB_API_URL") or "https://api.github.com")
        repository = env.get("GITHUB_REPOSITORY", "")
        if not _REPO.match(repository):
            raise NoContext("GITHUB_REPOSITORY must be owner/name (run inside GitHub Actions)")
        event = _event(env.get("GITHUB_EVENT_PATH"))
        pr = _pull_request(event)
        head = pr[1] if pr is not None and pr[1] else env.get("GITHUB_SHA", "")
        if not _SHA.match(head or ""):
            raise NoContext("no commit to check: GITHUB_SHA is not a 40-hex commit id")
        summary = env.get("GITHUB_STEP_SUMMARY")
        return cls(
            api_url=api_url,
            token=token.strip(),
            repository=repository,
            head_sha=head,
            pr_number=pr[0] if pr is not None else None,
            step_summary=Path(summary) if summary else None,
            login=env.get("GRADEBOX_GITHUB_LOGIN") or None,
        )


def check_api_url(url: str) -> str:
    """The API root if it is safe to send a token to: https, or http to a loopback address.

    Raises:
        NoContext: Another scheme, credentials or a query in the URL, or plain http elsewhere.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise NoContext("GITHUB_API_URL must be an https:// URL")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise NoContext("GITHUB_API_URL must not carry credentials, a query or a fragment")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise NoContext("GITHUB_API_URL must be https:// (plain http only to a loopback address)")
    return url.rstrip("/")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _event(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        p = Path(path)
        if p.stat().st_size > _MAX_EVENT_BYTES:
            raise NoContext(f"GITHUB_EVENT_PATH: larger than {_MAX_EVENT_BYTES} bytes")
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, json.JSONDecodeError) as exc:
        raise NoContext(f"GITHUB_EVENT_PATH: cannot read the event file: {exc}") from exc
    if not isinstance(data, dict):
        raise NoContext("GITHUB_EVENT_PATH: the event is not a JSON object")
    return data


def _pull_request(event: Mapping[str, Any]) -> tuple[int, str] | None:
    """``(number, head sha)`` of the event's pull request, if it has one."""
    pr = event.get("pull_request")
    if isinstance(pr, dict):
        number, head = pr.get("number"), (pr.get("head") or {}).get("sha")
        if isinstance(number, int) and number > 0 and isinstance(head, str):
            return number, head
        raise NoContext("the event's pull_request has no number or head.sha")
    issue = event.get("issue")
    number = issue.get("number") if isinstance(issue, dict) else None
    if isinstance(issue, dict) and issue.get("pull_request") and isinstance(number, int):
        return (number, "") if number > 0 else None  # the head is GITHUB_SHA's
    return None
