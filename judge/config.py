"""The judge's configuration: an explicit object, read from the environment only on request.

Nothing here reads ``os.environ``. The CLI calls :meth:`JudgeConfig.from_env`
with the environment mapping at its boundary; tests pass a plain dict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.capabilities import Capabilities
from judge.errors import JudgeConfigError, JudgeNotConfigured

__all__ = [
    "DEFAULT_BASE_URL",
    "ENV_VARS",
    "RESERVED_BODY_KEYS",
    "TIMEOUT_ENV",
    "JudgeConfig",
    "parse_extra_body",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Used when an API key is configured but no base URL."""
ENV_VARS = {
    "base_url": ("GRADEBOX_JUDGE_BASE_URL", "OPENAI_BASE_URL"),
    "api_key": ("GRADEBOX_JUDGE_API_KEY", "OPENAI_API_KEY"),
    "model": ("GRADEBOX_JUDGE_MODEL",),
}
"""Environment variables per setting, first one set (and non-empty) wins."""
TIMEOUT_ENV = "GRADEBOX_JUDGE_TIMEOUT_S"
"""Optional: seconds per request (default 60). A model on a CPU server (llama-cpp-python
writing grammar-constrained JSON at a few tokens a second) may need minutes."""
RESERVED_BODY_KEYS = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "seed",
        "response_format",
        "max_tokens",
        "max_completion_tokens",
        "stream",
        "n",
        "tools",
        "tool_choice",
    }
)
"""Request fields the judge sets itself: ``extra_body`` may not override them (the cache
key and the reply protocol depend on them)."""


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """How to reach the judge model and how hard to try.

    Example:
        >>> cfg = JudgeConfig.from_env({"GRADEBOX_JUDGE_BASE_URL": "http://127.0.0.1:8000/v1",
        ...                             "GRADEBOX_JUDGE_MODEL": "qwen2.5-coder"})
        >>> cfg.model, cfg.temperature
        ('qwen2.5-coder', 0.0)
    """

    base_url: str
    """OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:8000/v1``."""
    model: str
    """Model name as the endpoint knows it."""
    api_key: str | None = field(default=None, repr=False)
    """Bearer key; ``None`` for local servers that need none. Never shown in ``repr``."""
    seed: int = 20240531
    """Sent with every request; part of the cache key."""
    timeout_s: float = 60.0
    """Per-request timeout (connect + read)."""
    max_attempts: int = 4
    """Requests per judgement, the first included, before the result is ``unavailable``."""
    backoff_initial_s: float = 1.0
    """First backoff without a ``Retry-After``; doubles per attempt, plus jitter."""
    backoff_max_s: float = 30.0
    """Cap on one backoff without a ``Retry-After``."""
    retry_after_max_s: float = 120.0
    """Longest ``Retry-After`` honoured; a server asking for more gets no further attempt."""
    concurrency: int = 8
    """Judgements in flight at once in :meth:`judge.Judge.judge_many`."""
    cache_path: Path | None = None
    """SQLite cache file; ``None`` for no cache."""
    no_cache: bool = False
    """Neither read nor write the cache (``--no-cache``)."""
    temperature: float = field(default=0.0, init=False)
    """Always 0 when a temperature is sent: the judge must be as repeatable as the endpoint
    allows (a model that refuses 0 gets none: see :class:`judge.capabilities.Capabilities`)."""
    repeat: int | None = None
    """Judge each item this many times, bypassing the cache, and keep the majority
    (``--judge-repeat``); ``None``: 1, or 3 when the endpoint refuses temperature 0."""
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    """Provider options merged into every request body (``--judge-extra-body``), e.g.
    OpenRouter's ``{"provider": {"require_parameters": true}}``; part of the cache key."""
    max_output_tokens: int | None = None
    """Cap on the reply's tokens (sent as ``max_tokens`` or ``max_completion_tokens``,
    whichever the endpoint takes); ``None`` sends no cap."""
    capabilities: Capabilities | None = None
    """Pinned capabilities: no probe. ``None``: probe the endpoint before the first
    judgement (and keep the result in the cache for :attr:`probe_ttl_s`)."""
    probe_ttl_s: float = 86_400.0
    """How long a cached probe result is trusted."""
    probe_rubric: str = "default"
    """The rubric the probe's fixed item is asked with (a name or a path): the run's own
    when it uses one rubric for every task (``--judge-rubric``), so that a slow local
    server spends the probe on the prompt it will answer; part of the probe's cache key."""

    def __post_init__(self) -> None:
        problems = list(_problems(self))
        if problems:
            raise JudgeConfigError("invalid judge configuration: " + "; ".join(problems))

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> JudgeConfig:
        """Build a configuration from environment variables (the CLI boundary only).

        ``GRADEBOX_JUDGE_BASE_URL`` (else ``OPENAI_BASE_URL``; else the OpenAI API
        when a key is set), ``GRADEBOX_JUDGE_API_KEY`` (else ``OPENAI_API_KEY``),
        ``GRADEBOX_JUDGE_MODEL``, and optionally ``GRADEBOX_JUDGE_TIMEOUT_S``. Empty
        values count as unset. Other settings keep their defaults; change them with
        :func:`dataclasses.replace`.

        Args:
            environ: The environment, e.g. ``os.environ``.

        Returns:
            The configuration.

        Raises:
            JudgeNotConfigured: Neither a base URL nor an API key is set.
            JudgeConfigError: An endpoint is set but no model, or a value is invalid.
        """
        found = {name: _first(environ, names) for name, names in ENV_VARS.items()}
        if found["base_url"] is None and found["api_key"] is None:
            raise JudgeNotConfigured(
                "judge skipped: no endpoint configured (set GRADEBOX_JUDGE_BASE_URL and "
                "GRADEBOX_JUDGE_MODEL, or OPENAI_API_KEY and GRADEBOX_JUDGE_MODEL)"
            )
        if found["model"] is None:
            raise JudgeConfigError("judge endpoint is set but no model: set GRADEBOX_JUDGE_MODEL")
        timeout = _first(environ, (TIMEOUT_ENV,))
        try:
            timeout_s = 60.0 if timeout is None else float(timeout)
        except ValueError as exc:
            raise JudgeConfigError(f"{TIMEOUT_ENV}: not a number of seconds: {timeout!r}") from exc
        return cls(
            base_url=found["base_url"] or DEFAULT_BASE_URL,
            model=found["model"],
            api_key=found["api_key"],
            timeout_s=timeout_s,
        )


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


def _problems(cfg: JudgeConfig) -> list[str]:
    checks = [
        (cfg.base_url.startswith(("http://", "https://")), "base_url must be an http(s) URL"),
        (bool(cfg.model.strip()), "model must not be empty"),
        (cfg.max_attempts >= 1, "max_attempts must be at least 1"),
        (cfg.concurrency >= 1, "concurrency must be at least 1"),
        (math.isfinite(cfg.timeout_s) and cfg.timeout_s > 0, "timeout_s must be positive"),
        (cfg.backoff_initial_s >= 0 and cfg.backoff_max_s >= 0, "backoffs must not be negative"),
        (cfg.retry_after_max_s >= 0, "retry_after_max_s must not be negative"),
        (cfg.repeat is None or 1 <= cfg.repeat <= 25, "repeat must be between 1 and 25"),
        (
            cfg.max_output_tokens is None or cfg.max_output_tokens >= 1,
            "max_output_tokens must be at least 1",
        ),
        (cfg.probe_ttl_s >= 0, "probe_ttl_s must not be negative"),
    ]
    problems = [message for ok, message in checks if not ok]
    reserved = sorted(RESERVED_BODY_KEYS & set(cfg.extra_body))
    if reserved:
        problems.append(f"extra_body must not set {reserved}: the judge sets them itself")
    try:
        json.dumps(dict(cfg.extra_body), allow_nan=False)
    except (TypeError, ValueError) as exc:
        problems.append(f"extra_body is not plain JSON: {exc}")
    return problems


def parse_extra_body(text: str, *, where: str = "--judge-extra-body") -> dict[str, Any]:
    """Read ``--judge-extra-body``: a JSON object of provider options.

    Args:
        text: The option's value.
        where: The option's name, for the message.

    Returns:
        The object.

    Raises:
        JudgeConfigError: Not a JSON object, or it sets a field the judge sets itself.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise JudgeConfigError(f"{where}: not JSON ({exc})") from exc
    if type(value) is not dict:
        raise JudgeConfigError(f"{where}: must be a JSON object, got {type(value).__name__}")
    reserved = sorted(RESERVED_BODY_KEYS & set(value))
    if reserved:
        raise JudgeConfigError(f"{where}: must not set {reserved}: the judge sets them itself")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
