"""The judge: annotate candidates against a rubric with an LLM, and never decide a verdict.

Cache: :meth:`Judge.judge_many` first looks every item up by its input key
(:func:`judge.cache.input_key`, no rendering) in a few batched queries and
builds the hits from the stored, already-checked results. The rest are
rendered, looked up by request key (a stored reply is checked again, and its
result stored under the input key), and the misses are asked.

Capabilities: before its first judgement the judge probes the endpoint
(:meth:`Judge.probe`, :mod:`judge.capabilities`) with a fixed item, or reads
what an earlier probe of the same endpoint, model and options found from the
cache. The rung, the temperature policy and the token parameter it chose go
into every request and every cache key. A model that refuses temperature 0
makes the judge non-deterministic: it then judges every item
:attr:`Judge.repeat` times (3 unless ``config.repeat`` says otherwise).

Repeats (``config.repeat`` > 1): each item is asked N times, never from the
cache; every reply is stored under its own key (the request key with the
repeat's index), and the result is the majority (:func:`judge.repeat.combine`).

The API key: every reply and error is redacted of it as it arrives, and
whatever is read back from the cache is redacted again; while the judge is
open, the HTTP stack's loggers are filtered the same way (:mod:`judge.redact`).

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
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

import openai

import rubrics
from judge.cache import ReplyCache, StoredResult, cache_key, input_context, input_key
from judge.capabilities import LADDER, Capabilities, ProbeReport, RungTrial, adjusted
from judge.config import JudgeConfig
from judge.endpoint import Endpoint, request_body
from judge.errors import (
    ConnectionFailed,
    EndpointError,
    EndpointTimeout,
    JudgeConfigError,
    RateLimited,
    RequestRejected,
    ServerError,
    TransientError,
)
from judge.prompt import PromptBuilder, RenderedPrompt
from judge.redact import RedactingFilter, Redactor
from judge.repeat import combine
from judge.reply import ReplyChecker, Violation
from judge.servers import identify
from judge.types import JudgeItem, JudgeResult, ReasonCode, Reply, ResponseMode
from rubrics import Rubric

__all__ = ["PROBE_ITEM", "Judge"]

PROBE_ITEM = JudgeItem(
    sample_id="gradebox-probe",
    fn="add",
    spec="Return the sum of the integers a and b.",
    signature="def add(a: int, b: int) -> int",
    code='def add(a: int, b: int) -> int:\n    """Return a + b."""\n    return a + b\n',
    rubric_name="default",
)
"""The fixed item every probe asks about: no candidate decides what an endpoint can do."""
_PROBE_FORMAT = 2
"""Bumped when what a stored probe report means changes (2: the ``json_object_schema`` rung)."""
_USELESS = frozenset({"parse_failure", "empty_reply"})
"""Probe violations that say the rung produced no JSON at all."""

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
        keys = [getattr(client, name, None) for name in ("api_key", "admin_api_key")]
        self._redact = Redactor([config.api_key, *(k for k in keys if k != _NO_KEY)])
        self._endpoint = Endpoint(client, config, redactor=self._redact)
        self._cache = _open_cache(config)
        self._log_filter: RedactingFilter | None = None
        if self._redact:  # after what can fail: a judge that exists is one close() detaches
            self._log_filter = RedactingFilter(self._redact)
            self._log_filter.attach()
        self._prepared: dict[str, _Prepared] = {}
        self._contexts: dict[str, str] = {}
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._report: ProbeReport | None = None
        if config.capabilities is not None:
            self._report = ProbeReport(
                str(client.base_url),
                config.model,
                config.capabilities,
                (),
                ("capabilities pinned by the configuration: not probed",),
                (),
                time.time(),
            )
        self._fingerprints: dict[str, int] = {}

    @property
    def model(self) -> str:
        """The model this judge asks (as configured)."""
        return self._config.model

    # -- capabilities ------------------------------------------------------------------------

    @property
    def probe_report(self) -> ProbeReport | None:
        """What probing found (or the pinned capabilities); ``None`` before the first probe."""
        return self._report

    def probe(self, *, refresh: bool = False) -> ProbeReport:
        """Find out what the endpoint can do, once per judge (and per cache TTL).

        Args:
            refresh: Ask the endpoint again even when this judge or the cache knows.

        Returns:
            The report: the capabilities every later request uses.

        Raises:
            EndpointError: The endpoint cannot be reached, or refuses the judge itself
                (authentication, unknown model): nothing was learned.
        """
        with self._probe_lock:
            if self._report is not None and not refresh:
                return self._report
            stored = None if refresh else self._stored_probe()
            report = stored or self._run_probe()
            if stored is None and self._cache is not None:
                self._cache.put_probe(self._probe_key(), report.to_json())
            with self._lock:  # input keys depend on the capabilities
                self._report = report
                self._contexts.clear()
            return report

    def capabilities(self) -> Capabilities:
        """The capabilities in use (probing first when needed).

        Raises:
            EndpointError: See :meth:`probe`.
        """
        return self.probe().capabilities

    @property
    def repeat(self) -> int:
        """Judgements per item: ``config.repeat``, else 1, or 3 for a non-deterministic judge.

        Raises:
            EndpointError: See :meth:`probe` (the answer needs the temperature policy).
        """
        if self._config.repeat is not None:
            return self._config.repeat
        return 1 if self.capabilities().deterministic else 3

    def fingerprints_seen(self) -> dict[str, int]:
        """Each ``system_fingerprint`` fresh replies carried (probe included), first seen first.

        Returns:
            Fingerprint to the number of replies that carried it.
        """
        with self._lock:
            return dict(self._fingerprints)

    def _saw(self, reply: Reply) -> None:
        if reply.system_fingerprint:
            with self._lock:
                fp = reply.system_fingerprint[:200]
                self._fingerprints[fp] = self._fingerprints.get(fp, 0) + 1

    def _probe_key(self) -> str:
        cfg = self._config
        document = {
            "format": _PROBE_FORMAT,
            "base_url": str(self._client.base_url).rstrip("/"),
            "model": cfg.model,
            "seed": cfg.seed,
            "extra_body": dict(cfg.extra_body),
            "max_output_tokens": cfg.max_output_tokens,
        }
        if cfg.probe_rubric != "default":  # keys of probes with the default rubric unchanged
            rubric = self._prepare(cfg.probe_rubric).checker.rubric
            document["rubric"] = [rubric.name, rubric.version, rubric.digest]
        canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def _stored_probe(self) -> ProbeReport | None:
        if self._cache is None:
            return None
        found = self._cache.probe(self._probe_key())
        if found is None or time.time() - found[1] > self._config.probe_ttl_s:
            return None
        try:
            report = ProbeReport.from_json(json.loads(self._redact.text(found[0])))
        except ValueError:  # a damaged row: probe again
            return None
        return replace(report, cached=True)

    def _run_probe(self) -> ProbeReport:
        prepared = self._prepare(self._config.probe_rubric)
        prompt = prepared.builder.render(PROBE_ITEM)
        caps = Capabilities()
        trials: list[RungTrial] = []
        notes: list[str] = []
        prints: list[str] = []
        for rung in LADDER:
            try:
                caps, trial = self._try_rung(
                    prepared.checker, prompt, replace(caps, rung=rung), notes
                )
            except TransientError as exc:
                if not trials:  # nothing answered yet: the endpoint is down, not a rung
                    raise
                # The server answered an earlier rung, so it is up: this rung is slow or
                # broken there (a CPU server writing prose until the timeout), not usable.
                trial = RungTrial(rung, "rejected", _short(f"no usable reply: {exc}"))
            trials.append(trial)
            if trial.outcome == "validated":
                break
        else:
            caps = replace(caps, rung=_fallback_rung(trials))
        with self._lock:
            prints = list(self._fingerprints)
        errors = [t.detail for t in trials if t.outcome == "rejected"] + notes
        server = identify(self._endpoint.server_info(errors))
        return ProbeReport(
            str(self._client.base_url),
            self._config.model,
            caps,
            tuple(trials),
            tuple(notes),
            tuple(prints),
            time.time(),
            server=server[0] if server else None,
            server_evidence=server[1] if server else "",
        )

    def _try_rung(
        self, checker: ReplyChecker, prompt: RenderedPrompt, caps: Capabilities, notes: list[str]
    ) -> tuple[Capabilities, RungTrial]:
        token_cap = self._config.max_output_tokens is not None
        for _ in range(3):  # the temperature and the token parameter, each at most once
            try:
                reply, _ = self._endpoint.request(prompt.messages, checker.schema, caps)
            except RequestRejected as exc:
                change = adjusted(exc, caps, token_cap=token_cap)
                if change is not None:
                    caps = change[0]
                    notes.append(change[1])
                    continue
                if exc.status_code in (401, 403, 404):  # refuses us, not the rung: stop
                    raise
                return caps, RungTrial(caps.rung, "rejected", _short(str(exc)))
            self._saw(reply)
            checked = checker.check(reply, prompt.line_count)
            if isinstance(checked, Violation):
                return caps, RungTrial(
                    caps.rung, "invalid", _short(f"{checked.code}: {checked.detail}")
                )
            return caps, RungTrial(caps.rung, "validated", "the reply validated")
        return caps, RungTrial(caps.rung, "rejected", "still refused after adjusting parameters")

    def _temperature(self, caps: Capabilities) -> float | None:
        return self._config.temperature if caps.temperature == "zero" else None

    def _extras(self, caps: Capabilities) -> dict[str, Any]:
        body = request_body(self._config, caps)
        return {k: v for k, v in body.items() if k not in ("seed", "temperature")}

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
                self._prepared[name_or_path] = _Prepared(
                    checker,
                    builder,
                    f"{rubric.name}@{rubric.version}",
                    frozenset(c.id for c in rubric.criteria),
                )
            return self._prepared[name_or_path]

    def _context(self, name_or_path: str) -> str:
        """The input key's per-rubric part (needs the capabilities: may probe)."""
        caps = self.capabilities()
        prepared = self._prepare(name_or_path)
        with self._lock:
            if name_or_path not in self._contexts:
                rubric = prepared.checker.rubric
                templates = json.dumps(dataclasses.asdict(rubric.prompt), sort_keys=True)
                self._contexts[name_or_path] = input_context(
                    base_url=str(self._client.base_url),
                    model=self._config.model,
                    seed=self._config.seed,
                    temperature=self._temperature(caps),
                    rubric=(rubric.name, rubric.version, rubric.digest),
                    schema_sha256=prepared.checker.schema_sha256,
                    templates_sha256=hashlib.sha256(templates.encode()).hexdigest(),
                    rung=caps.rung,
                    extras=self._extras(caps),
                )
            return self._contexts[name_or_path]

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
        if todo:
            try:
                repeat = self.repeat
            except EndpointError as exc:  # the probe could not reach the endpoint
                done.update((i, self._probe_failed(items[i], exc)) for i in todo)
                return [done[i] for i in range(len(items))]
            if repeat > 1:
                done.update(self._repeated([(i, items[i]) for i in todo], repeat, bypass_cache))
                return [done[i] for i in range(len(items))]
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
        return self.judge_many([item], bypass_cache=bypass_cache)[0]

    def _repeated(
        self, todo: Sequence[tuple[int, JudgeItem]], repeat: int, bypass_cache: bool
    ) -> dict[int, JudgeResult]:
        """Ask every item ``repeat`` times and combine each item's answers into its majority.

        Never read from the cache; each reply is stored under its repeat's own key
        (unless ``bypass_cache``).
        """
        jobs = [(i, self._plan(item, "", r)) for i, item in todo for r in range(repeat)]
        workers = min(self._config.concurrency, len(jobs))
        with ThreadPoolExecutor(workers, thread_name_prefix="gradebox-judge") as pool:
            asked = list(pool.map(lambda job: self._ask(job[1], bypass_cache, result=False), jobs))
        per_item: dict[int, list[JudgeResult]] = {}
        for (i, _), result in zip(jobs, asked, strict=True):
            per_item.setdefault(i, []).append(result)
        rubrics_of = {i: self._prepare(item.rubric_name).checker.rubric for i, item in todo}
        return {i: combine(results, rubrics_of[i]) for i, results in per_item.items()}

    def _probe_failed(self, item: JudgeItem, exc: EndpointError) -> JudgeResult:
        prepared = self._prepare(item.rubric_name)
        return _unavailable_result(
            exc,
            rubric=prepared.label,
            model=self._config.model,
            latency_ms=0.0,
            mode=None,
            key="",
            reason_prefix="probing the endpoint failed: ",
        )

    def _input_key(self, item: JudgeItem) -> str:
        return input_key(
            self._context(item.rubric_name),
            fn=item.fn,
            signature=item.signature,
            spec=item.spec,
            code=item.code,
            scope=item.cache_scope,
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
                stored = (stored[0], self._redact.text(stored[1]))  # as for stored replies
                result = _decode(stored, prepared[item.rubric_name], latency_ms)
                if result is not None:
                    results[i] = result
        return results

    def _plan(self, item: JudgeItem, input_key: str, repeat: int = 0) -> _Plan:
        """Render the request and its key (``repeat``: which repeat of the item)."""
        started = time.perf_counter()
        prepared = self._prepare(item.rubric_name)
        prompt = prepared.builder.render(item)
        caps = self.capabilities()
        key = self._key(item, prepared.checker, prompt, caps, repeat)
        return _Plan(prepared.checker, prompt, key, input_key, started, caps)

    def _cached(self, plan: _Plan, bypass_cache: bool) -> JudgeResult | None:
        if bypass_cache or self._cache is None:
            return None
        reply = self._cache.get(plan.key)
        if reply is None:
            return None
        reply = self._redact.reply(reply)  # stored by an older version, perhaps unredacted
        return _interpret(reply, plan, plan.started, hit=True, attempts=0)

    def _ask(self, plan: _Plan, bypass_cache: bool, *, result: bool = True) -> JudgeResult:
        """Send one request; store the reply (and, with ``result``, the checked result)."""
        started = time.perf_counter()
        try:
            reply, attempts = self._endpoint.complete(
                plan.prompt.messages, plan.checker.schema, plan.caps
            )
        except EndpointError as exc:
            return self._unavailable(exc, plan, started)
        self._saw(reply)
        judged = _interpret(reply, plan, started, hit=False, attempts=attempts)
        if self._cache is not None and not bypass_cache:
            record = self._request_record(plan, reply)
            stored = (plan.input_key, _stored_fields(judged)) if result else None
            self._cache.put(plan.key, reply, record, result=stored)
        return judged

    def close(self) -> None:
        """Close the cache, and the client when the judge built it; stop filtering logs."""
        if self._cache is not None:
            self._cache.close()
        if self._owned:
            self._client.close()
        if self._log_filter is not None:
            self._log_filter.detach()

    def __enter__(self) -> Judge:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _key(
        self,
        item: JudgeItem,
        checker: ReplyChecker,
        prompt: RenderedPrompt,
        caps: Capabilities,
        repeat: int,
    ) -> str:
        rubric = checker.rubric
        return cache_key(
            base_url=str(self._client.base_url),
            model=self._config.model,
            messages=prompt.messages(caps.rung),
            schema_sha256=checker.schema_sha256,
            rubric=(rubric.name, rubric.version, rubric.digest),
            code=item.code,
            seed=self._config.seed,
            temperature=self._temperature(caps),
            rung=caps.rung,
            extras=self._extras(caps),
            repeat=repeat,
            scope=item.cache_scope,
        )

    def _request_record(self, plan: _Plan, reply: Reply) -> dict[str, Any]:
        return {
            "base_url": str(self._client.base_url),
            "model": self._config.model,
            "temperature": self._temperature(plan.caps),
            "seed": self._config.seed,
            "response_format": reply.mode,
            "body": request_body(self._config, plan.caps),
            "schema_sha256": plan.checker.schema_sha256,
            "messages": plan.prompt.messages(reply.mode),
        }

    def _unavailable(self, exc: EndpointError, plan: _Plan, started: float) -> JudgeResult:
        rubric = plan.checker.rubric
        return _unavailable_result(
            exc,
            rubric=f"{rubric.name}@{rubric.version}",
            model=self._config.model,
            latency_ms=_ms_since(started),
            mode=plan.caps.rung,
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
    caps: Capabilities
    """How the request is sent."""


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What a judge builds once per rubric."""

    checker: ReplyChecker
    """The rubric, its reply schema and validator."""
    builder: PromptBuilder
    """Its prompt text."""
    label: str
    """``name@version``, as results carry it."""
    criteria: frozenset[str]
    """The rubric's criterion ids: the keys of a scored result's scores."""


_VARYING = frozenset({"latency_ms", "cache_hit", "attempts"})
"""Row fields that describe this judgement, not the reply: not stored with the result."""
_STORED_STATUSES = frozenset({"scored", "needs_review"})
"""Only completed exchanges have a stored result."""


def _unavailable_result(
    exc: EndpointError,
    *,
    rubric: str,
    model: str,
    latency_ms: float,
    mode: ResponseMode | None,
    key: str,
    reason_prefix: str = "",
) -> JudgeResult:
    code: ReasonCode = next(
        (c for cls, c in _UNAVAILABLE_CODES if isinstance(exc, cls)), "endpoint_error"
    )
    return JudgeResult(
        status="unavailable",
        rubric=rubric,
        model=model,
        latency_ms=latency_ms,
        attempts=exc.attempts,
        mode=mode,
        reason_code=code,
        reason=f"{reason_prefix}{exc} (after {exc.attempts} attempt(s))",
        key=key,
    )


def _fallback_rung(trials: Sequence[RungTrial]) -> ResponseMode:
    """The rung to keep when none validated.

    The first whose reply was at least JSON, else the first that answered, else the
    bottom rung: a weak model fails every rung the same way, and a better rung costs
    it nothing.
    """
    answered = [t for t in trials if t.outcome == "invalid"]
    json_ok = [t for t in answered if t.detail.split(":", 1)[0] not in _USELESS]
    chosen = json_ok or answered
    return chosen[0].rung if chosen else LADDER[-1]


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
