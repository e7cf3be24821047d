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
this is the only policy. Structured output: requests ask for a strict
``json_schema``; a 400 that names ``response_format`` / ``json_schema`` switches
this endpoint to ``{"type": "json_object"}`` (the schema then goes into the
system prompt) for this and every later request.
"""

from __future__ import annotations

import email.utils
import math
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import openai
import tenacity
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat

from judge.config import JudgeConfig
from judge.errors import (
    ConnectionFailed,
    EndpointError,
    EndpointTimeout,
    RateLimited,
    RequestRejected,
    ServerError,
    StructuredOutputUnsupported,
    TransientError,
)
from judge.reply import SCHEMA_NAME
from judge.types import Reply, ResponseMode, Tokens

__all__ = ["Endpoint", "map_openai_error", "parse_retry_after"]

Messages = Callable[[ResponseMode], list[ChatCompletionMessageParam]]
"""Builds the messages for a response mode (JSON mode adds the schema in words)."""
_FORMAT_WORDS = ("response_format", "json_schema", "structured output")


class Endpoint:
    """Sends judge requests to one endpoint with the retry policy and the JSON-mode fallback.

    Thread-safe: one instance serves every worker thread of a judge.
    """

    def __init__(
        self,
        client: openai.OpenAI,
        config: JudgeConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Wrap ``client`` (whose own retries must be off) for ``config``'s model.

        Args:
            client: The openai client, pointed at the endpoint.
            config: Model, seed, timeout and retry settings.
            sleep: How to wait between attempts (tests may record waits).
        """
        self._client = client
        self._config = config
        self._sleep = sleep
        self._mode: ResponseMode = "json_schema"
        self._lock = threading.Lock()

    @property
    def mode(self) -> ResponseMode:
        """The response format this endpoint is asked for now."""
        with self._lock:
            return self._mode

    def complete(self, messages: Messages, schema: dict[str, Any]) -> tuple[Reply, int]:
        """Get one reply, retrying transient failures and falling back to JSON mode.

        Args:
            messages: Builds the messages for a response mode.
            schema: The reply schema for the strict response format.

        Returns:
            The reply and the number of requests made.

        Raises:
            EndpointError: No usable HTTP reply; ``attempts`` says how many requests were made.
        """
        mode = self.mode
        try:
            return self._with_retries(messages, schema, mode)
        except StructuredOutputUnsupported as exc:
            if mode != "json_schema":
                raise
            self._fall_back()
            before = exc.attempts
        try:
            reply, attempts = self._with_retries(messages, schema, "json_object")
        except EndpointError as exc:
            exc.attempts += before
            raise
        return reply, attempts + before

    def _fall_back(self) -> None:
        with self._lock:
            self._mode = "json_object"

    def _with_retries(
        self, messages: Messages, schema: dict[str, Any], mode: ResponseMode
    ) -> tuple[Reply, int]:
        attempts = 0

        def attempt() -> Reply:
            nonlocal attempts
            attempts += 1
            return self._send(messages(mode), schema, mode)

        try:
            return self._retrying()(attempt), attempts
        except EndpointError as exc:
            exc.attempts = attempts
            raise

    def _retrying(self) -> tenacity.Retrying:
        cfg = self._config
        backoff = tenacity.wait_random_exponential(
            multiplier=cfg.backoff_initial_s, max=cfg.backoff_max_s
        )
        return tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(TransientError),
            stop=tenacity.stop_after_attempt(cfg.max_attempts)
            | _StopIfRetryAfterAbove(cfg.retry_after_max_s),
            wait=_WaitRetryAfter(backoff),
            sleep=self._sleep,
            reraise=True,
        )

    def _send(
        self, messages: list[ChatCompletionMessageParam], schema: dict[str, Any], mode: ResponseMode
    ) -> Reply:
        cfg = self._config
        try:
            completion = self._client.chat.completions.create(
                model=cfg.model,
                messages=messages,
                temperature=cfg.temperature,
                seed=cfg.seed,
                response_format=_response_format(mode, schema),
                timeout=cfg.timeout_s,
            )
        except openai.OpenAIError as exc:
            raise map_openai_error(exc) from exc
        return _reply_from(completion, mode)


def _response_format(mode: ResponseMode, schema: dict[str, Any]) -> ResponseFormat:
    if mode == "json_object":
        return {"type": "json_object"}
    return {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": schema},
    }


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
    if status == 429:
        return RateLimited(message, status_code=status, retry_after=hint)
    if status >= 500:
        return ServerError(message, status_code=status, retry_after=hint)
    if status == 408:
        return EndpointTimeout(message, status_code=status, retry_after=hint)
    if status == 400 and any(w in str(exc.body).lower() + message.lower() for w in _FORMAT_WORDS):
        return StructuredOutputUnsupported(message, status_code=status)
    return RequestRejected(message, status_code=status)


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
