r"""The LLM judge: annotate candidates against a rubric; never pass or fail one.

The judge sees the public spec, the signature and the extracted code -- never
hidden cases, expected values, test outcomes or the model's prose -- with the
code neutralised and delimited (:mod:`judge.neutralize`). It first probes what
the endpoint can do (:mod:`judge.capabilities`: the strongest response format
whose reply validates, whether temperature 0 is accepted), then asks at
temperature 0 with a fixed seed for a JSON-schema reply (:mod:`judge.reply`),
retries transient failures (:mod:`judge.endpoint`), repeats and combines
judgements when asked (:mod:`judge.repeat`), rewrites candidates for invariance
probes (:mod:`judge.invariance`) and caches replies in SQLite (:mod:`judge.cache`).
A reply that breaks protocol is ``needs_review``; an endpoint that cannot answer
is ``unavailable``.

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
from judge.capabilities import Capabilities, ProbeReport, RungTrial
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
    ParameterUnsupported,
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
    InvarianceProbe,
    Issue,
    JudgeItem,
    JudgeResult,
    JudgeStatus,
    PanelVote,
    ProbeCheck,
    ReasonCode,
    Repeat,
    ResponseMode,
    Severity,
    TemperaturePolicy,
    TokenParam,
    Tokens,
)

__all__ = [
    "Capabilities",
    "ConnectionFailed",
    "EndpointError",
    "EndpointTimeout",
    "IntentVerdict",
    "InvarianceProbe",
    "Issue",
    "Judge",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeError",
    "JudgeItem",
    "JudgeNotConfigured",
    "JudgeResult",
    "JudgeStatus",
    "PanelVote",
    "ParameterUnsupported",
    "ProbeCheck",
    "ProbeReport",
    "RateLimited",
    "ReasonCode",
    "Repeat",
    "ReplyCache",
    "RequestRejected",
    "ResponseMode",
    "RungTrial",
    "ServerError",
    "Severity",
    "StructuredOutputUnsupported",
    "TemperaturePolicy",
    "TokenParam",
    "Tokens",
    "TransientError",
    "cache_key",
    "map_openai_error",
    "neutralize",
    "reply_schema",
]
