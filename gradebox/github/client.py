"""A small GitHub REST client: httpx for HTTP, tenacity for retries, errors that say what to do.

Retried (at most ``attempts`` tries in all): 5xx replies and transport errors,
with exponential backoff; rate limits (429, or 403 with ``Retry-After`` or
``x-ratelimit-remaining: 0``), after waiting as told: ``Retry-After`` seconds,
or until ``x-ratelimit-reset``. A wait longer than ``max_wait_s`` is not waited:
it is a :class:`~gradebox.github.errors.RateLimited` at once. A 403 or 404 is a
:class:`~gradebox.github.errors.MissingPermission` naming the permission the
call needs. Pages are followed through ``Link: rel="next"`` only while it points
under the same API root (the token is never sent anywhere else), and never
through redirects (httpx does not follow them unless asked).
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import tenacity

from gradebox.github.context import GitHubContext
from gradebox.github.errors import (
    ApiUnavailable,
    MissingPermission,
    PostError,
    RateLimited,
    redact,
)

__all__ = ["ClientOptions", "GitHubClient"]

_MAX_PAGES = 50


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """How patient the client is."""

    attempts: int = 4
    """Tries per request, the first included."""
    max_wait_s: float = 60.0
    """The longest rate-limit wait honoured; a longer one fails at once."""
    backoff_s: float = 0.5
    """First backoff after a 5xx or transport error (doubling, at most 8 s)."""
    timeout_s: float = 30.0
    """Connect/read timeout of each request."""


class _Retry(Exception):
    """One try failed in a way worth another: ``wait_s`` as the API said, else backoff."""

    def __init__(self, what: str, wait_s: float | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.wait_s = wait_s


class GitHubClient:
    """Calls to one repository's API with one token."""

    def __init__(
        self,
        ctx: GitHubContext,
        options: ClientOptions | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Open a client (close it with :meth:`close`, or use ``with``).

        Args:
            ctx: Where to post and with which token.
            options: Retries, waits and timeouts.
            sleep: How to wait (``time.sleep``).
            transport: An httpx transport (the default: real sockets).
        """
        self._ctx = ctx
        self._opts = options or ClientOptions()
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=ctx.api_url + "/",
            headers={
                "Authorization": f"Bearer {ctx.token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "gradebox",
            },
            timeout=self._opts.timeout_s,
            follow_redirects=False,
            transport=transport,
        )

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def call(
        self, method: str, path: str, *, need: str, json: Any = None, retry: bool = True
    ) -> Any:
        """One API call; the decoded JSON reply (``None`` for an empty body).

        Args:
            method: ``GET``, ``POST``, ``PATCH``.
            path: Under the API root, e.g. ``repos/o/r/check-runs``.
            need: The permission it needs, for a 403/404 message (``checks: write``).
            json: The body.
            retry: Retry as the module docstring says (``False``: one try; the
                caller makes a non-idempotent call safe itself).

        Raises:
            PostError: Any failure, mapped as the module docstring says.
        """
        return self._send(method, path.lstrip("/"), need, json, retry=retry).json_body

    def pages(self, path: str, *, need: str) -> list[Any]:
        """Every item of a paginated list (``per_page=100``), following same-origin links."""
        url: str = path.lstrip("/") + ("&" if "?" in path else "?") + "per_page=100"
        items: list[Any] = []
        for _ in range(_MAX_PAGES):
            reply = self._send("GET", url, need, None, retry=True)
            if not isinstance(reply.json_body, list):
                raise ApiUnavailable(f"GET {path}: the API did not answer a list")
            items += reply.json_body
            nxt = reply.next_url
            if nxt is None:
                return items
            if not nxt.startswith(self._ctx.api_url + "/"):
                raise ApiUnavailable(
                    f"GET {path}: the next page is outside the API root; not followed"
                )
            url = nxt
        return items

    def _send(self, method: str, url: str, need: str, body: Any, *, retry: bool) -> _Reply:
        where = f"{method} /{url.split('?', 1)[0]}" if "://" not in url else f"{method} page"
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self._opts.attempts),
            # Without ``retry`` only rate limits are tried again: nothing was done then.
            retry=tenacity.retry_if_exception(
                lambda e: isinstance(e, _Retry) and (retry or e.wait_s is not None)
            ),
            wait=self._wait,
            sleep=self._sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._once(method, url, need, body, where)
        except _Retry as exc:
            raise ApiUnavailable(self._clean(f"{where}: {exc.what} (gave up)")) from None
        raise AssertionError("unreachable")  # pragma: no cover - tenacity reraises

    def backoff(self, attempt: int) -> None:
        """Sleep the backoff before try ``attempt`` + 1 (for callers retrying by hand)."""
        self._sleep(min(8.0, self._opts.backoff_s * 2 ** (attempt - 1)))

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, _Retry) and exc.wait_s is not None:
            return exc.wait_s
        return float(min(8.0, self._opts.backoff_s * 2 ** (state.attempt_number - 1)))

    def _once(self, method: str, url: str, need: str, body: Any, where: str) -> _Reply:
        try:
            resp = self._http.request(method, url, json=body)
        except httpx.TransportError as exc:
            raise _Retry(f"cannot reach the API: {type(exc).__name__}") from None
        status = resp.status_code
        if 200 <= status < 300:
            return _Reply(_json(resp, where), _next(resp))
        message = self._clean(_message(resp))
        wait = _rate_limit_wait(resp)
        if wait is not None:
            if wait > self._opts.max_wait_s:
                raise RateLimited(
                    f"{where}: rate limited for {wait:.0f} s, longer than the "
                    f"{self._opts.max_wait_s:.0f} s gradebox waits; try again later"
                )
            raise _Retry(f"rate limited ({status})", wait)
        if status >= 500:
            raise _Retry(f"{status} {message}")
        raise _refusal(where, status, message, need)

    def _clean(self, text: str) -> str:
        return redact(text, self._ctx.token)


@dataclass(frozen=True, slots=True)
class _Reply:
    json_body: Any
    next_url: str | None


def _json(resp: httpx.Response, where: str) -> Any:
    if not resp.content:
        return None
    try:
        return resp.json()
    except ValueError:
        raise ApiUnavailable(f"{where}: the API answered something that is not JSON") from None


def _next(resp: httpx.Response) -> str | None:
    link = resp.links.get("next")
    return None if link is None else link.get("url")


def _message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:200]
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])[:200]
    return ""


def _rate_limit_wait(resp: httpx.Response) -> float | None:
    """Seconds the API asks to wait, when this reply is a rate limit; else ``None``."""
    if resp.status_code not in (403, 429):
        return None
    after = resp.headers.get("retry-after")
    if after is not None:
        return _retry_after(after)
    if resp.headers.get("x-ratelimit-remaining") == "0":
        try:
            reset = float(resp.headers.get("x-ratelimit-reset", ""))
        except ValueError:
            return 60.0
        return max(0.0, reset - time.time()) + 1.0
    return 60.0 if resp.status_code == 429 else None


def _retry_after(value: str) -> float:
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 60.0
    return max(0.0, when.timestamp() - time.time())


def _refusal(where: str, status: int, message: str, need: str) -> PostError:
    said = f" ({message})" if message else ""
    if status == 401:
        return MissingPermission(
            f"{where}: 401{said}: the token was refused (wrong or expired)", status
        )
    if status == 403:
        return MissingPermission(
            f"{where}: 403{said}: the token lacks the `{need}` permission; add it to the "
            "workflow's `permissions:` block",
            status,
        )
    if status == 404:
        return MissingPermission(
            f"{where}: 404{said}: not found, or the token cannot see it (it needs `{need}`); "
            "check GITHUB_REPOSITORY and the pull request",
            status,
        )
    return PostError(f"{where}: {status}{said}")
