"""Where gate results are read on GitHub: a sticky PR comment, a check run, the job summary.

Example:
    >>> ctx = GitHubContext.from_env(os.environ)  # doctest: +SKIP
    >>> post(rows, ctx).ok  # doctest: +SKIP
    True

:mod:`gradebox.github.action` is the composite Action's script and
:mod:`gradebox.github.precommit` the pre-commit hook's: both only build a
``gradebox gate`` command line and run it.
"""

from gradebox.github.client import ClientOptions, GitHubClient
from gradebox.github.context import GitHubContext
from gradebox.github.errors import (
    ApiUnavailable,
    MissingPermission,
    NoContext,
    PostError,
    RateLimited,
)
from gradebox.github.poster import PartResult, PostReport, post, post_from_env

__all__ = [
    "ApiUnavailable",
    "ClientOptions",
    "GitHubClient",
    "GitHubContext",
    "MissingPermission",
    "NoContext",
    "PartResult",
    "PostError",
    "PostReport",
    "RateLimited",
    "post",
    "post_from_env",
]
