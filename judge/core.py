"""The judge: annotate candidates against a rubric with an LLM, and never decide a verdict.

Cache: :meth:`Judge.judge_many` first looks every item up by its input key
(:func:`judge.cache.input_key`, no rendering) in a few batched queries and
builds the hits from the stored, already-checked results. The rest are
rendered, looked up by request key (a stored reply is checked again, and its
result stored under the input key), and the misses are asked.

Concurrency: the lookups run in the calling thread; the misses are sent from a thread pool of
``config.concurrency`` workers sharing one synchronous openai client (its
connection pool is thread-safe). Threads rather than asyncio because the
work is I/O-bound and the callers (``gradebox grade``, and the service, which
already runs an event loop) are synchronous at this seam: a blocking call that
starts no event loop of its own works from both.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
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
from judge.cache import ReplyCache, StoredResult, cache_key, input_context, input_key
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
                templates = json.dumps(dataclasses.asdict(rubric.prompt), sort_keys=True)
                context = input_context(
                    base_url=str(self._client.base_url),
                    model=self._config.model,
                    seed=self._config.seed,
                    temperature=self._config.temperature,
                    rubric=(rubric.name, rubric.version, rubric.digest),
                    schema_sha256=checker.schema_sha256,
                    templates_sha256=hashlib.sha256(templates.encode()).hexdigest(),
                )
                self._prepared[name_or_path] = _Prepared(
                    checker,
                    builder,
                    context,
                    f"{rubric.name}@{rubric.version}",
                    frozenset(c.id for c in rubric.criteria),
                )
            return self._prepared[name_or_path]

    def judge_many(
        self, items: Sequence[JudgeItem], *, bypass_cache: bool = False
    ) -> list[JudgeResult]:
        """Judge ``items``, asking the endpoint at most ``config.concurrency`` at a time.

        Every rubric named is loaded before any request, so a bad rubric stops
        the run before it costs anything. Cache hits are served in the calling
        thread (stored results in a few batched queries, then stored replies,
        checked again); only misses go to the thread pool.

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
        todo = [i for i, item in enumerate(items) if item.code.strip()]
        done.update((i, _no_code()) for i, item in enumerate(items) if not item.code.strip())
        input_keys = {i: self._input_key(items[i]) for i in todo}
        done.update(self._stored([(i, items[i], input_keys[i]) for i in todo], bypass_cache))
        healed: list[tuple[str, str, dict[str, Any]]] = []
        for i in todo:
            if i in done:
                continue
            plan = self._plan(items[i], input_keys[i])
            ready = self._cached(plan, bypass_cache)
            if ready is None:
                waiting.append((i, plan))
            else:
                done[i] = ready
                healed.append((plan.input_key, plan.key, _stored_fields(ready)))
        if healed and self._cache is not None:
            self._cache.put_results(healed)
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
        if not item.code.strip():
            return _no_code()
        key = self._input_key(item)
        stored = self._stored([(0, item, key)], bypass_cache)
        if stored:
            return stored[0]
        plan = self._plan(item, key)
        ready = self._cached(plan, bypass_cache)
        if ready is None:
            return self._ask(plan, bypass_cache)
        if self._cache is not None:
            self._cache.put_results([(plan.input_key, plan.key, _stored_fields(ready))])
        return ready

    def _input_key(self, item: JudgeItem) -> str:
        return input_key(
            self._prepare(item.rubric_name).context,
            fn=item.fn,
            signature=item.signature,
            spec=item.spec,
            code=item.code,
        )

    def _stored(
        self, wanted: Sequence[tuple[int, JudgeItem, str]], bypass_cache: bool
    ) -> dict[int, JudgeResult]:
        """The fast path: stored, already-checked results by input key, in batched queries.

        A stored result that does not decode, or does not fit the rubric it is
        looked up for, is left out (a miss): the slow path checks the stored
        reply again and replaces it.
        """
        if bypass_cache or self._cache is None or not wanted:
            return {}
        started = time.perf_counter()
        found = self._cache.results([key for _, _, key in wanted])
        latency_ms = _ms_since(started) / len(wanted)
        results: dict[int, JudgeResult] = {}
        prepared = {
            name: self._prepare(name) for name in {item.rubric_name for _, item, _ in wanted}
        }
        for i, item, key in wanted:
            stored = found.get(key)
            if stored is not None:
                result = _decode(stored, prepared[item.rubric_name], latency_ms)
                if result is not None:
                    results[i] = result
        return results

    def _plan(self, item: JudgeItem, input_key: str) -> _Plan:
        """Render the request and its key."""
        started = time.perf_counter()
        prepared = self._prepare(item.rubric_name)
        prompt = prepared.builder.render(item)
        key = self._key(item, prepared.checker, prompt)
        return _Plan(prepared.checker, prompt, key, input_key, started)

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
        result = _interpret(reply, plan, started, hit=False, attempts=attempts)
        if self._cache is not None and not bypass_cache:
            record = self._request_record(plan, reply)
            stored = (plan.input_key, _stored_fields(result))
            self._cache.put(plan.key, reply, record, result=stored)
        return result

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
    input_key: str
    """The input key the checked result is stored under."""
    started: float
    """When work on the item began (``time.perf_counter``)."""


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What a judge builds once per rubric."""

    checker: ReplyChecker
    """The rubric, its reply schema and validator."""
    builder: PromptBuilder
    """Its prompt text."""
    context: str
    """The per-judge, per-rubric part of the input key (:func:`judge.cache.input_context`)."""
    label: str
    """``name@version``, as results carry it."""
    criteria: frozenset[str]
    """The rubric's criterion ids: the keys of a scored result's scores."""


_VARYING = frozenset({"latency_ms", "cache_hit", "attempts"})
"""Row fields that describe this judgement, not the reply: not stored with the result."""
_STORED_STATUSES = frozenset({"scored", "needs_review"})
"""Only completed exchanges have a stored result."""


def _no_code() -> JudgeResult:
    return JudgeResult.skipped("no_code", "no code was extracted, so there is nothing to judge")


def _stored_fields(result: JudgeResult) -> dict[str, Any]:
    """What is stored of a checked result: its row, without what varies per judgement."""
    row = result.to_row()
    for name in _VARYING:
        del row[name]
    return row


def _decode(stored: StoredResult, prepared: _Prepared, latency_ms: float) -> JudgeResult | None:
    """A stored result as a cache hit, or ``None`` when it is unusable (then: a miss)."""
    request_key, text = stored
    try:
        row = json.loads(text)
        if type(row) is not dict or not _VARYING.isdisjoint(row):
            return None
        row["latency_ms"], row["cache_hit"], row["attempts"] = latency_ms, True, 0
        result = JudgeResult.from_row(row)
    except ValueError:  # json.JSONDecodeError included
        return None
    fits = (
        result.status in _STORED_STATUSES
        and result.key == request_key
        and result.rubric == prepared.label
        and (result.status != "scored" or result.scores.keys() == prepared.criteria)
    )
    return result if fits else None


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
