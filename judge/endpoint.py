"""One OpenAI-compatible endpoint: send a request, map its errors, retry, fall back.

The retry policy (tenacity):

- retried: :class:`~judge.errors.TransientError` -- HTTP 429, 5xx, 408,
  timeouts and connection errors. Nothing else (a 401 or 404 will not improve);
- wait: the server's ``Retry-After`` (or ``retry-after-ms``) when it sends one,
  plus up to 10 % jitter so that parallel workers do not return in lockstep;
  otherwise exponential backoff with full jitter (``backoff_initial_s`` doubling,
  capped at ``backoff_max_s``);
- stop: after ``max_attempts`` requests, or at once when the server asks for a
  wait longer than ``retry_after_max_s``. The last error is raised with
  ``attempts`` set; the judge records ``unavailable``.

The openai client's own retries are switched off (``max_retries=0``) so that
this is the only policy. Every reply and every error is redacted of the API key
as it arrives (:mod:`judge.redact`), before anything reads, stores or raises it.
Structured output: each request is sent with the
:class:`~judge.capabilities.Capabilities` the probe chose (response-format rung,
temperature policy, token parameter). A refusal of the response format (a 400
that names ``response_format`` / ``json_schema``, or a 4xx/500/501 whose body says
its type is not accepted, as llama-cpp-python's HTTP 500 ``Input should be 'text'
or 'json_object'`` does) is a capability answer, not an outage: it is not
retried, and asks *that request* again one rung down; it never changes the rung
for later requests, so a candidate whose code makes a server refuse one request
(an error that echoes the prompt) cannot degrade anyone else's. Only the
probe, with its fixed item, chooses rungs and temperature.
"""

from __future__ import annotations

import email.utils
import math
import random
import re
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, cast

import openai
import tenacity
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat

from judge.capabilities import Capabilities, next_rung
from judge.config import JudgeConfig
from judge.errors import (
    ConnectionFailed,
    EndpointError,
    EndpointTimeout,
    ParameterUnsupported,
    RateLimited,
    RequestRejected,
    ServerError,
    StructuredOutputUnsupported,
    TransientError,
)
from judge.redact import Redactor
from judge.reply import SCHEMA_NAME
from judge.servers import ServerInfo
from judge.types import Reply, ResponseMode, Tokens

__all__ = ["Endpoint", "map_openai_error", "parse_retry_after", "request_body", "retrying"]

Messages = Callable[[ResponseMode], list[ChatCompletionMessageParam]]
"""Builds the messages for a response mode (JSON mode adds the schema in words)."""
_FORMAT_WORDS = ("response_format", "json_schema", "structured output")
_REFUSALS = (
    "not supported",
    "unsupported",
    "does not support",
    "not accepted",
    "not allowed",
    "not permitted",
    "extra inputs",
    "extra_forbidden",
    "input should be",
    "literal_error",
    "must be",
    "invalid",
    "unrecognized",
    "not recognized",
    "unknown",
)
"""Words of a server saying a value or a parameter is not accepted."""
_BODY_LOC = re.compile(r"""['"]body['"]\s*,\s*['"]([A-Za-z_]+)['"]""")
"""A pydantic/FastAPI validation error's location: ``('body', 'response_format', 'type')``."""


class Endpoint:
    """Sends judge requests to one endpoint with the retry policy and the per-request fallback.

    Thread-safe: one instance serves every worker thread of a judge.
    """

    def __init__(
        self,
        client: openai.OpenAI,
        config: JudgeConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        redactor: Redactor | None = None,
    ) -> None:
        """Wrap ``client`` (whose own retries must be off) for ``config``'s model.

        Args:
            client: The openai client, pointed at the endpoint.
            config: Model, seed, timeout and retry settings.
            sleep: How to wait between attempts (tests may record waits).
            redactor: Cuts the API key out of every reply and error as it arrives
                (:mod:`judge.redact`); ``None``: ``config.api_key``'s.
        """
        self._client = client
        self._config = config
        self._sleep = sleep
        self._redact = redactor if redactor is not None else Redactor([config.api_key])

    def complete(
        self, messages: Messages, schema: dict[str, Any], caps: Capabilities
    ) -> tuple[Reply, int]:
        """Get one reply, retrying transient failures; a refused format goes one rung down.

        Args:
            messages: Builds the messages for a response mode.
            schema: The reply schema for the response format.
            caps: How to ask (rung, temperature policy, token parameter).

        Returns:
            The reply (its ``mode`` is the rung that answered) and the number of
            requests made.

        Raises:
            EndpointError: No usable HTTP reply; ``attempts`` says how many requests were made.
        """
        before = 0
        rung: ResponseMode | None = caps.rung
        while True:
            assert rung is not None  # noqa: S101 - the loop leaves before running out
            try:
                reply, attempts = self.request(messages, schema, replace(caps, rung=rung))
            except StructuredOutputUnsupported as exc:
                exc.attempts += before
                rung = next_rung(rung)
                if rung is None:
                    raise
                before = exc.attempts
                continue
            except EndpointError as exc:
                exc.attempts += before
                raise
            return reply, attempts + before

    def request(
        self, messages: Messages, schema: dict[str, Any], caps: Capabilities
    ) -> tuple[Reply, int]:
        """One request exactly as ``caps`` says, with the retry policy (no fallback).

        Raises:
            EndpointError: No usable HTTP reply; ``attempts`` is set.
        """
        attempts = 0

        def attempt() -> Reply:
            nonlocal attempts
            attempts += 1
            return self._send(messages(caps.rung), schema, caps)

        try:
            return self._retrying()(attempt), attempts
        except EndpointError as exc:
            exc.attempts = attempts
            raise

    def _retrying(self) -> tenacity.Retrying:
        cfg = self._config
        return retrying(
            max_attempts=cfg.max_attempts,
            backoff_initial_s=cfg.backoff_initial_s,
            backoff_max_s=cfg.backoff_max_s,
            retry_after_max_s=cfg.retry_after_max_s,
            sleep=self._sleep,
        )

    def server_info(self, errors: list[str]) -> ServerInfo:
        """What the server says about itself: ``GET /models`` (``owned_by``, headers).

        One request, no retries; any failure leaves those parts empty (the probe
        does not depend on it). Everything is redacted of the API key.

        Args:
            errors: Error messages the probe met (kept as evidence too).
        """
        owned: list[str] = []
        headers: dict[str, str] = {}
        try:
            raw = self._client.models.with_raw_response.list(timeout=self._config.timeout_s)
            headers = dict(raw.headers.items())
            owned = [m.owned_by for m in raw.parse().data if isinstance(m.owned_by, str)]
        except openai.APIStatusError as exc:  # a server without /models still sent headers
            headers = dict(exc.response.headers.items())
        except (openai.OpenAIError, ValueError, TypeError):
            pass
        clean = {k: self._redact.text(v) for k, v in headers.items()}
        return ServerInfo.bounded([self._redact.text(o) for o in owned], clean, errors)

    def _send(
        self, messages: list[ChatCompletionMessageParam], schema: dict[str, Any], caps: Capabilities
    ) -> Reply:
        cfg = self._config
        body: dict[str, Any] = dict(cfg.extra_body)
        if cfg.max_output_tokens is not None:
            body[caps.token_param] = cfg.max_output_tokens
        sampling: dict[str, Any] = {}
        if caps.temperature == "zero":
            sampling["temperature"] = cfg.temperature
        response_format = _response_format(caps.rung, schema)
        if response_format is not None:
            sampling["response_format"] = response_format
        try:
            completion = self._client.chat.completions.create(
                model=cfg.model,
                messages=messages,
                seed=cfg.seed,
                timeout=cfg.timeout_s,
                extra_body=body or None,
                **sampling,
            )
            reply = _reply_from(completion, caps.rung)
        except openai.OpenAIError as exc:
            mapped = map_openai_error(exc)
            self._redact.exception(exc)  # the cause a traceback shows, and its body
            self._redact.exception(mapped)
            raise mapped from exc
        except EndpointError as exc:  # not a chat completion: the message quotes it
            self._redact.exception(exc)
            raise
        return self._redact.reply(reply)


def retrying(
    *,
    max_attempts: int,
    backoff_initial_s: float,
    backoff_max_s: float,
    retry_after_max_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> tenacity.Retrying:
    """The retry policy of the module docstring, for any caller that raises :mod:`judge.errors`.

    Args:
        max_attempts: Requests in all, the first included.
        backoff_initial_s: First backoff without a ``Retry-After`` (doubling, full jitter).
        backoff_max_s: Cap on one backoff without a ``Retry-After``.
        retry_after_max_s: Longest ``Retry-After`` honoured; longer stops at once.
        sleep: How to wait between attempts.

    Returns:
        A ``tenacity.Retrying`` that retries :class:`~judge.errors.TransientError` only
        and re-raises the last error.
    """
    backoff = tenacity.wait_random_exponential(multiplier=backoff_initial_s, max=backoff_max_s)
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(TransientError),
        stop=tenacity.stop_after_attempt(max_attempts) | _StopIfRetryAfterAbove(retry_after_max_s),
        wait=_WaitRetryAfter(backoff),
        sleep=sleep,
        reraise=True,
    )


def request_body(cfg: JudgeConfig, caps: Capabilities) -> dict[str, Any]:
    """What a request sends besides model, messages and response format (for the record).

    Args:
        cfg: The judge configuration.
        caps: The capabilities the request is sent with.

    Returns:
        Temperature (when sent), seed, the token cap under its name, and ``extra_body``.
    """
    body: dict[str, Any] = {"seed": cfg.seed, **cfg.extra_body}
    if caps.temperature == "zero":
        body["temperature"] = cfg.temperature
    if cfg.max_output_tokens is not None:
        body[caps.token_param] = cfg.max_output_tokens
    return body


def _response_format(mode: ResponseMode, schema: dict[str, Any]) -> ResponseFormat | None:
    if mode == "prompt_only":
        return None
    if mode == "json_object":
        return {"type": "json_object"}
    if mode == "json_object_schema":  # llama-cpp-python: JSON mode with a grammar from the schema
        return cast(ResponseFormat, {"type": "json_object", "schema": schema})
    spec: dict[str, Any] = {"name": SCHEMA_NAME, "schema": schema}
    if mode == "json_schema":
        spec["strict"] = True
    return cast(ResponseFormat, {"type": "json_schema", "json_schema": spec})


def _reply_from(completion: Any, mode: ResponseMode) -> Reply:
    if not isinstance(completion, ChatCompletion):
        raise EndpointError(f"the endpoint's reply is not a chat completion: {completion!r:.200}")
    usage = completion.usage
    tokens = None if usage is None else Tokens(usage.prompt_tokens, usage.completion_tokens)
    choice = completion.choices[0] if completion.choices else None
    message = choice.message if choice is not None else None
    return Reply(
        content=message.content if message is not None else None,
        model=completion.model,
        system_fingerprint=completion.system_fingerprint,
        finish_reason=choice.finish_reason if choice is not None else None,
        refusal=message.refusal if message is not None else None,
        tokens=tokens,
        mode=mode,
    )


def map_openai_error(exc: openai.OpenAIError) -> EndpointError:
    """Map an openai exception to the judge's hierarchy (the one mapping boundary).

    Args:
        exc: What the openai client raised.

    Returns:
        The judge error to raise ``from exc``.
    """
    if isinstance(exc, openai.APITimeoutError):
        return EndpointTimeout(f"no reply within the timeout: {exc}")
    if isinstance(exc, openai.APIConnectionError):
        return ConnectionFailed(f"connection failed: {exc}")
    if isinstance(exc, openai.APIStatusError):
        return _map_status(exc)
    return EndpointError(f"unexpected reply from the endpoint: {type(exc).__name__}: {exc}")


def _map_status(exc: openai.APIStatusError) -> EndpointError:
    status = exc.status_code
    hint = parse_retry_after(exc.response.headers)
    message = f"HTTP {status}: {exc.message}"
    if isinstance(exc.body, str) and exc.body not in message:  # LM Studio: {"error": "text"}
        message += f": {exc.body[:300]}"
    param = _error_param(exc)
    if status == 429:
        return RateLimited(message, status_code=status, retry_after=hint)
    if status == 408:
        return EndpointTimeout(message, status_code=status, retry_after=hint)
    words = str(exc.body).lower() + " " + message.lower()
    if status == 400 and (param == "response_format" or any(w in words for w in _FORMAT_WORDS)):
        return StructuredOutputUnsupported(message, status_code=status, param=param)
    refused = _refused_parameter(status, param, words)
    if refused == "response_format":
        return StructuredOutputUnsupported(message, status_code=status, param=refused)
    if refused is not None:
        return ParameterUnsupported(message, status_code=status, param=refused)
    if status >= 500:
        return ServerError(message, status_code=status, retry_after=hint)
    return RequestRejected(message, status_code=status, param=param)


def _refused_parameter(status: int, param: str | None, words: str) -> str | None:
    """The parameter an error says is not accepted, or ``None``.

    Read from any 4xx and from 500/501 (servers that let a validation error escape
    as an internal error: llama-cpp-python); never from 502-504, which proxies send
    for outages. The error must say *not accepted* in some words (:data:`_REFUSALS`)
    and name the parameter: OpenAI's ``error.param``, else a validation error's
    ``('body', name, ...)`` location, else ``response_format`` when the format's
    words appear.
    """
    if status >= 502 or not any(w in words for w in _REFUSALS):
        return None
    if param is not None:
        return re.split(r"[.\[]", param, maxsplit=1)[0] or None
    loc = _BODY_LOC.search(words)
    if loc is not None:
        return loc.group(1)
    return "response_format" if any(w in words for w in _FORMAT_WORDS) else None


def _error_param(exc: openai.APIStatusError) -> str | None:
    """OpenAI's ``error.param`` (top level or nested), when the server sends a string."""
    param = getattr(exc, "param", None)
    if isinstance(param, str):
        return param
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("param"), str):
            return str(inner["param"])
    return None


def parse_retry_after(headers: Any, *, now: Callable[[], datetime] | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date).

    Args:
        headers: Response headers (any mapping with ``get``).
        now: Current time for HTTP dates (tests).

    Returns:
        Non-negative seconds, or ``None`` when absent or unreadable.
    """
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    seconds = _number(value)
    if seconds is not None or value is None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = now() if now is not None else datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _retry_after(state: tenacity.RetryCallState) -> float | None:
    exc = state.outcome.exception() if state.outcome is not None else None
    return exc.retry_after if isinstance(exc, TransientError) else None


class _WaitRetryAfter(tenacity.wait.wait_base):
    """Wait what the server asked for (plus <= 10 % jitter), else ``fallback``."""

    def __init__(self, fallback: tenacity.wait.wait_base) -> None:
        self._fallback = fallback

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        hint = _retry_after(retry_state)
        if hint is None:
            return float(self._fallback(retry_state))
        return hint * (1 + random.uniform(0, 0.1))  # noqa: S311 - jitter, not crypto


class _StopIfRetryAfterAbove(tenacity.stop.stop_base):
    """Give up when the server asks for a longer wait than we are willing to honour."""

    def __init__(self, limit_s: float) -> None:
        self._limit_s = limit_s

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        hint = _retry_after(retry_state)
        return hint is not None and hint > self._limit_s
