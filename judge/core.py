"""The judge: annotate candidates against a rubric with an LLM, and never decide a verdict.

Concurrency: :meth:`Judge.judge_many` renders every request and serves cache
hits in the calling thread, then sends the misses from a thread pool of
``config.concurrency`` workers sharing one synchronous openai client (its
connection pool is thread-safe). Threads rather than asyncio because the
work is I/O-bound and the callers (``gradebox grade``, and the service, which
already runs an event loop) are synchronous at this seam: a blocking call that
starts no event loop of its own works from both.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import openai

import rubrics
from judge.cache import ReplyCache, cache_key
from judge.config import JudgeConfig
from judge.endpoint import Endpoint
from judge.errors import (
    ConnectionFailed,
    EndpointError,
    EndpointTimeout,
    JudgeConfigError,
    RateLimited,
    RequestRejected,
    ServerError,
)
from judge.prompt import PromptBuilder, RenderedPrompt
from judge.reply import ReplyChecker, Violation
from judge.types import JudgeItem, JudgeResult, ReasonCode, Reply
from rubrics import Rubric

__all__ = ["Judge"]

_NO_KEY = "no-key"
"""Sent when no API key is configured (local servers ignore it). Without it the
openai client would read ``OPENAI_API_KEY`` from the process environment."""
_UNAVAILABLE_CODES: tuple[tuple[type[EndpointError], ReasonCode], ...] = (
    (RateLimited, "rate_limited"),
    (ServerError, "server_error"),
    (EndpointTimeout, "timeout"),
    (ConnectionFailed, "connection"),
    (RequestRejected, "rejected"),
)


class Judge:
    """Judges candidates with one model at one endpoint.

    Example:
        >>> cfg = JudgeConfig(base_url="http://127.0.0.1:8000/v1", model="m")
        >>> with Judge(cfg) as judge:  # doctest: +SKIP
        ...     [r.status for r in judge.judge_many(items)]
        ['scored', 'needs_review']
    """

    def __init__(self, config: JudgeConfig, client: openai.OpenAI | None = None) -> None:
        """Set up the endpoint and the cache.

        Args:
            config: Endpoint, model, seed, retries, concurrency and cache.
            client: An openai client to use (tests, custom transports). Its own
                retries are switched off on a copy; it is not closed by
                :meth:`close`. ``None`` builds one from ``config``.

        Raises:
            JudgeConfigError: The cache file cannot be opened.
        """
        self._config = config
        self._owned = client is None
        if client is None:
            client = openai.OpenAI(
                base_url=config.base_url,
                api_key=config.api_key or _NO_KEY,
                max_retries=0,
                timeout=config.timeout_s,
            )
        else:
            client = client.with_options(max_retries=0)
        self._client = client
        self._endpoint = Endpoint(client, config)
        self._cache = _open_cache(config)
        self._prepared: dict[str, _Prepared] = {}
        self._lock = threading.Lock()

    def rubric(self, name_or_path: str) -> Rubric:
        """Load a rubric (once per judge).

        Raises:
            rubrics.RubricError: The rubric is missing or invalid.
        """
        return self._prepare(name_or_path).checker.rubric

    def _prepare(self, name_or_path: str) -> _Prepared:
        with self._lock:
            if name_or_path not in self._prepared:
                rubric = rubrics.load(name_or_path)
                checker = ReplyChecker(rubric)
                builder = PromptBuilder(rubric, checker.schema)
                self._prepared[name_or_path] = _Prepared(checker, builder)
            return self._prepared[name_or_path]

    def judge_many(
        self, items: Sequence[JudgeItem], *, bypass_cache: bool = False
    ) -> list[JudgeResult]:
        """Judge ``items``, asking the endpoint at most ``config.concurrency`` at a time.

        Every rubric named is loaded before any request, so a bad rubric stops
        the run before it costs anything. Cache hits are served in the calling
        thread; only misses go to the thread pool.

        Args:
            items: The candidates.
            bypass_cache: Neither read nor write the cache (repeat judgements).

        Returns:
            One result per item, in input order.

        Raises:
            rubrics.RubricError: A rubric named by an item is missing or invalid.
        """
        for name in dict.fromkeys(item.rubric_name for item in items):
            self.rubric(name)
        done: dict[int, JudgeResult] = {}
        waiting: list[tuple[int, _Plan]] = []
        for i, plan in enumerate(self._plan(item) for item in items):
            ready = plan if isinstance(plan, JudgeResult) else self._cached(plan, bypass_cache)
            if ready is not None:
                done[i] = ready
            elif isinstance(plan, _Plan):
                waiting.append((i, plan))
        if waiting:
            workers = min(self._config.concurrency, len(waiting))
            with ThreadPoolExecutor(workers, thread_name_prefix="gradebox-judge") as pool:
                asked = pool.map(lambda job: self._ask(job[1], bypass_cache), waiting)
                done.update(zip((i for i, _ in waiting), asked, strict=True))
        return [done[i] for i in range(len(items))]

    def judge_one(self, item: JudgeItem, *, bypass_cache: bool = False) -> JudgeResult:
        """Judge one candidate.

        Args:
            item: The candidate.
            bypass_cache: Neither read nor write the cache.

        Returns:
            ``scored``, ``needs_review`` (reply broke protocol; raw kept),
            ``unavailable`` (no reply after the retry budget) or ``skipped``
            (no code).

        Raises:
            rubrics.RubricError: The item's rubric is missing or invalid.
        """
        plan = self._plan(item)
        if isinstance(plan, JudgeResult):
            return plan
        return self._cached(plan, bypass_cache) or self._ask(plan, bypass_cache)

    def _plan(self, item: JudgeItem) -> _Plan | JudgeResult:
        """Render the request and its key, or say why there is nothing to ask."""
        if not item.code.strip():
            return JudgeResult.skipped(
                "no_code", "no code was extracted, so there is nothing to judge"
            )
        started = time.perf_counter()
        prepared = self._prepare(item.rubric_name)
        prompt = prepared.builder.render(item)
        return _Plan(prepared.checker, prompt, self._key(item, prepared.checker, prompt), started)

    def _cached(self, plan: _Plan, bypass_cache: bool) -> JudgeResult | None:
        if bypass_cache or self._cache is None:
            return None
        reply = self._cache.get(plan.key)
        if reply is None:
            return None
        return _interpret(reply, plan, plan.started, hit=True, attempts=0)

    def _ask(self, plan: _Plan, bypass_cache: bool) -> JudgeResult:
        started = time.perf_counter()
        try:
            reply, attempts = self._endpoint.complete(plan.prompt.messages, plan.checker.schema)
        except EndpointError as exc:
            return self._unavailable(exc, plan, started)
        if self._cache is not None and not bypass_cache:
            self._cache.put(plan.key, reply, self._request_record(plan, reply))
        return _interpret(reply, plan, started, hit=False, attempts=attempts)

    def close(self) -> None:
        """Close the cache, and the client when the judge built it."""
        if self._cache is not None:
            self._cache.close()
        if self._owned:
            self._client.close()

    def __enter__(self) -> Judge:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _key(self, item: JudgeItem, checker: ReplyChecker, prompt: RenderedPrompt) -> str:
        rubric = checker.rubric
        return cache_key(
            base_url=str(self._client.base_url),
            model=self._config.model,
            messages=prompt.messages("json_schema"),
            schema_sha256=checker.schema_sha256,
            rubric=(rubric.name, rubric.version, rubric.digest),
            code=item.code,
            seed=self._config.seed,
            temperature=self._config.temperature,
        )

    def _request_record(self, plan: _Plan, reply: Reply) -> dict[str, Any]:
        return {
            "base_url": str(self._client.base_url),
            "model": self._config.model,
            "temperature": self._config.temperature,
            "seed": self._config.seed,
            "response_format": reply.mode,
            "schema_sha256": plan.checker.schema_sha256,
            "messages": plan.prompt.messages(reply.mode),
        }

    def _unavailable(self, exc: EndpointError, plan: _Plan, started: float) -> JudgeResult:
        code: ReasonCode = next(
            (c for cls, c in _UNAVAILABLE_CODES if isinstance(exc, cls)), "endpoint_error"
        )
        rubric = plan.checker.rubric
        return JudgeResult(
            status="unavailable",
            rubric=f"{rubric.name}@{rubric.version}",
            model=self._config.model,
            latency_ms=_ms_since(started),
            attempts=exc.attempts,
            mode=self._endpoint.mode,
            reason_code=code,
            reason=f"{exc} (after {exc.attempts} attempt(s))",
            key=plan.key,
        )


@dataclass(frozen=True, slots=True)
class _Plan:
    """One item's request, ready to look up or send."""

    checker: ReplyChecker
    """The rubric and its reply checks."""
    prompt: RenderedPrompt
    """The rendered messages."""
    key: str
    """The request's cache key."""
    started: float
    """When work on the item began (``time.perf_counter``)."""


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What a judge builds once per rubric."""

    checker: ReplyChecker
    """The rubric, its reply schema and validator."""
    builder: PromptBuilder
    """Its prompt text."""


def _open_cache(config: JudgeConfig) -> ReplyCache | None:
    if config.no_cache or config.cache_path is None:
        return None
    try:
        return ReplyCache(config.cache_path)
    except (sqlite3.Error, OSError) as exc:
        raise JudgeConfigError(
            f"cannot open the judge cache {config.cache_path}: {exc} "
            "(point cache_path elsewhere, delete the file, or run without the cache)"
        ) from exc


def _interpret(
    reply: Reply, plan: _Plan, started: float, *, hit: bool, attempts: int
) -> JudgeResult:
    rubric = plan.checker.rubric
    checked = plan.checker.check(reply, plan.prompt.line_count)
    common: dict[str, Any] = {
        "rubric": f"{rubric.name}@{rubric.version}",
        "model": reply.model,
        "system_fingerprint": reply.system_fingerprint,
        "latency_ms": _ms_since(started),
        "tokens": reply.tokens,
        "cache_hit": hit,
        "attempts": attempts,
        "mode": reply.mode,
        "raw": reply.content if reply.content is not None else reply.refusal,
        "key": plan.key,
    }
    if isinstance(checked, Violation):
        return JudgeResult(
            status="needs_review", reason_code=checked.code, reason=checked.detail, **common
        )
    return JudgeResult(
        status="scored",
        verdict=checked.verdict,
        scores=checked.scores,
        weighted=rubric.weighted(checked.scores),
        issues=checked.issues,
        unmet_requirements=checked.unmet_requirements,
        rationale=checked.rationale,
        **common,
    )


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000
