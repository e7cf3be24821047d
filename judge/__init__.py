r"""The LLM judge: annotate candidates against a rubric; never pass or fail one.

The judge sees the public spec, the signature and the extracted code -- never
hidden cases, expected values, test outcomes or the model's prose -- with the
code neutralised and delimited (:mod:`judge.neutralize`). It asks at
temperature 0 with a fixed seed for a strict JSON-schema reply
(:mod:`judge.reply`), retries transient failures (:mod:`judge.endpoint`) and
caches replies in SQLite (:mod:`judge.cache`). A reply that breaks protocol is
``needs_review``; an endpoint that cannot answer is ``unavailable``.

Example:
    >>> from judge import Judge, JudgeConfig, JudgeItem
    >>> cfg = JudgeConfig(base_url="http://127.0.0.1:8000/v1", model="m", concurrency=8)
    >>> code = "def is_even(n):\n    return n % 2 == 0\n"
    >>> item = JudgeItem("s1", "is_even", "Return True if n is even.",
    ...                  "def is_even(n: int) -> bool", code)
    >>> with Judge(cfg) as judge:  # doctest: +SKIP
    ...     judge.judge_many([item])[0].to_row()["status"]
    'scored'

This package imports only the standard library, third-party libraries
(openai, tenacity, jsonschema) and ``rubrics``; never another gradebox layer.
"""

from judge.cache import ReplyCache, cache_key
from judge.config import JudgeConfig
from judge.core import Judge
from judge.endpoint import map_openai_error
from judge.errors import (
    ConnectionFailed,
    EndpointError,
    EndpointTimeout,
    JudgeConfigError,
    JudgeError,
    JudgeNotConfigured,
    RateLimited,
    RequestRejected,
    ServerError,
    StructuredOutputUnsupported,
    TransientError,
)
from judge.neutralize import neutralize
from judge.reply import reply_schema
from judge.types import (
    IntentVerdict,
    Issue,
    JudgeItem,
    JudgeResult,
    JudgeStatus,
    ReasonCode,
    ResponseMode,
    Severity,
    Tokens,
)

__all__ = [
    "ConnectionFailed",
    "EndpointError",
    "EndpointTimeout",
    "IntentVerdict",
    "Issue",
    "Judge",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeError",
    "JudgeItem",
    "JudgeNotConfigured",
    "JudgeResult",
    "JudgeStatus",
    "RateLimited",
    "ReasonCode",
    "ReplyCache",
    "RequestRejected",
    "ResponseMode",
    "ServerError",
    "Severity",
    "StructuredOutputUnsupported",
    "Tokens",
    "TransientError",
    "cache_key",
    "map_openai_error",
    "neutralize",
    "reply_schema",
]
