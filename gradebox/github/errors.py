"""Errors of posting a gate to GitHub.

::

    GradeboxError (gradebox.errors)
    └── PostError                 posting failed; raised by the client and the context,
        │                         caught by :func:`gradebox.github.post` (one part failed,
        │                         reported) and by the CLI under ``--post-strict`` (exit 2)
        ├── NoContext             the Actions environment is missing or wrong
        │                         (``GITHUB_TOKEN`` unset, an event file that does not
        │                         read, an API URL that is not https)
        ├── MissingPermission     403 or 404 from the API: the message names the
        │                         permission the workflow's ``permissions:`` block needs
        ├── RateLimited           the API asked to wait longer than the bound
        └── ApiUnavailable        5xx, a transport error or an unreadable reply, after
                                  the retries

No message ever carries the token: every text that could hold one goes through
:func:`redact` first (the client's errors, the API's own error bodies).
"""

from __future__ import annotations

from gradebox.errors import GradeboxError

__all__ = [
    "ApiUnavailable",
    "MissingPermission",
    "NoContext",
    "PostError",
    "RateLimited",
    "redact",
]


class PostError(GradeboxError):
    """Posting a gate to GitHub failed; the message says what to do next."""


class NoContext(PostError):
    """The GitHub Actions environment is missing or unusable."""


class MissingPermission(PostError):
    """The API refused (401, 403) or hid (404) a resource: a permission is missing."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status."""


class RateLimited(PostError):
    """The API asked to wait longer than gradebox is allowed to."""


class ApiUnavailable(PostError):
    """The API kept failing (5xx, transport errors) or answered something unreadable."""


def redact(text: str, secret: str | None, *, limit: int = 500) -> str:
    """``text`` with every occurrence of ``secret`` replaced, cut to ``limit`` characters."""
    if secret:
        text = text.replace(secret, "***")
    return text[:limit]
