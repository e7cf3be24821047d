"""Exceptions of the judge layer.

Only configuration and transport problems are exceptions. A reply that breaks
protocol is not: it becomes a ``needs_review`` result (see :mod:`judge.reply`).
openai's exceptions are mapped to these at one boundary,
:func:`judge.endpoint.map_openai_error`, and always chained (``raise X from exc``).

::

    JudgeError                      base; never raised itself
    ├── JudgeConfigError            the configuration is invalid, or the cache cannot be
    │   │                           opened (raised by JudgeConfig, JudgeConfig.from_env and
    │   │                           Judge(); caught by the CLI: exit 2)
    │   └── JudgeNotConfigured      no endpoint in the environment at all (raised by
    │                               from_env; caught by the CLI, which skips the judge
    │                               with one line and grades the rest offline)
    └── EndpointError               a request got no usable HTTP reply (raised by
        │                           judge.endpoint; caught by Judge.judge_one, which
        │                           returns status ``unavailable``: an infrastructure
        │                           outcome, never a candidate verdict)
        ├── TransientError          worth another attempt: the retry policy retries these
        │   ├── RateLimited         HTTP 429
        │   ├── ServerError         HTTP 5xx
        │   ├── EndpointTimeout     no reply within the timeout (or HTTP 408)
        │   └── ConnectionFailed    no connection, or it dropped
        └── RequestRejected         any other 4xx (auth, unknown model, bad request):
            │                       another attempt would get the same answer
            └── ParameterUnsupported
                │                   a 4xx, 500 or 501 whose body says a parameter we sent
                │                   is not accepted (``param`` names it): a capability
                │                   answer, not an outage, so never retried; the probe
                │                   adjusts (temperature, token parameter) or moves on
                └── StructuredOutputUnsupported
                                    the parameter is response_format (a 400 naming
                                    response_format / json_schema, or any refusal of its
                                    type, such as llama-cpp-python's HTTP 500): caught
                                    by the endpoint, which asks again one rung down the
                                    ladder for that request only, and by the probe,
                                    which moves to the next rung

rubrics.RubricError (a bad rubric file) comes from the rubrics layer and is
raised through Judge unchanged: the run must not start with a broken rubric.
"""

from __future__ import annotations

__all__ = [
    "ConnectionFailed",
    "EndpointError",
    "EndpointTimeout",
    "JudgeConfigError",
    "JudgeError",
    "JudgeNotConfigured",
    "ParameterUnsupported",
    "RateLimited",
    "RequestRejected",
    "ServerError",
    "StructuredOutputUnsupported",
    "TransientError",
]


class JudgeError(Exception):
    """Base class of every judge-layer error."""


class JudgeConfigError(JudgeError):
    """The judge configuration is invalid; the message names the setting to fix."""


class JudgeNotConfigured(JudgeConfigError):
    """No judge endpoint is configured; the message says which variables to set."""


class EndpointError(JudgeError):
    """The endpoint gave no usable reply.

    Attributes:
        status_code: The HTTP status, when there was a response.
        param: The request parameter the server's error names (OpenAI's ``error.param``).
        attempts: How many requests were made before giving up (set by the endpoint).
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.param = param
        self.attempts = 0


class TransientError(EndpointError):
    """A failure that another attempt may not have.

    Attributes:
        retry_after: Seconds the server asked us to wait (``Retry-After``), if it did.
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status_code=status_code)
        self.retry_after = retry_after


class RateLimited(TransientError):
    """HTTP 429: too many requests."""


class ServerError(TransientError):
    """HTTP 5xx: the server failed."""


class EndpointTimeout(TransientError):
    """No reply within the configured timeout (or the server answered 408)."""


class ConnectionFailed(TransientError):
    """The connection could not be made, or it dropped mid-request."""


class RequestRejected(EndpointError):
    """A 4xx other than 408/429: the request itself is refused; retrying will not help."""


class ParameterUnsupported(RequestRejected):
    """The server said a parameter we sent is not accepted, whatever the status (``param``)."""


class StructuredOutputUnsupported(ParameterUnsupported):
    """The server refused the ``response_format`` sent (its type, or the schema in it)."""
