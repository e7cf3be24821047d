"""Ask an OpenAI-compatible endpoint for ``n`` completions per task, resumably.

Every completion has a sample id, ``<task>#<index>`` (index 0..n-1); a run
first reads the output file (:class:`~gradebox.sampling.store.SampleStore`) and
asks only for the ids it lacks, so a re-run after a finished run sends no
request, and one after a kill asks only for what was not written.

Requests go out from a pool of ``concurrency`` threads sharing one openai
client, with the judge's retry policy (:func:`judge.endpoint.retrying`: 429,
5xx, timeouts and connection errors retried with the server's ``Retry-After``
or jittered exponential backoff; the client's own retries off) and its error
mapping (:func:`judge.endpoint.map_openai_error`). Every error text is redacted
of the API key. A request that is refused outright (401, 403, 404: the key or
the model is wrong) stops the run: nothing else would succeed.

With a ``seed``, completion ``i`` is asked with ``seed + i``: reproducible, and
not ``n`` copies of one answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

import openai

from gradebox.errors import SetupError
from gradebox.sampling.prompt import DEFAULT_TEMPLATE, check_template, render, task_name
from gradebox.sampling.store import SampleStore
from judge.config import DEFAULT_BASE_URL, ENV_VARS
from judge.endpoint import map_openai_error, retrying
from judge.errors import EndpointError, RequestRejected
from judge.redact import Redactor
from sandbox.types import PublicTask

__all__ = ["MODEL_ENV", "SampleConfig", "SampleReport", "Sampler", "sample_id"]

MODEL_ENV = "GRADEBOX_SAMPLE_MODEL"
"""The model to sample when ``--model`` is not given (the endpoint is the judge's)."""
_NO_KEY = "no-key"
"""Sent when no key is configured, so the client never reads ``OPENAI_API_KEY`` itself."""


@dataclass(frozen=True, slots=True)
class SampleConfig:
    """Where to ask, what to ask for, and how hard to try."""

    base_url: str
    """OpenAI-compatible endpoint (the judge's: ``GRADEBOX_JUDGE_BASE_URL``)."""
    model: str
    """The model sampled (``--model`` / ``GRADEBOX_SAMPLE_MODEL``)."""
    api_key: str | None = field(default=None, repr=False)
    """Bearer key (``GRADEBOX_JUDGE_API_KEY``); never shown in ``repr``."""
    n: int = 1
    """Completions per task."""
    temperature: float = 0.8
    """Sampling temperature (pass@k with k > 1 needs diversity)."""
    top_p: float | None = None
    """Nucleus sampling; ``None`` sends none."""
    max_tokens: int | None = 512
    """Cap on each completion's tokens; ``None`` sends none."""
    stop: tuple[str, ...] = ()
    """Stop sequences."""
    seed: int | None = None
    """Completion ``i`` is asked with ``seed + i``; ``None`` sends no seed."""
    concurrency: int = 4
    """Requests in flight at once."""
    timeout_s: float = 120.0
    """Per-request timeout."""
    max_attempts: int = 4
    """Requests per completion before it is given up (transient failures only)."""
    backoff_initial_s: float = 1.0
    """First backoff without a ``Retry-After`` (doubling, full jitter)."""
    backoff_max_s: float = 30.0
    """Cap on one backoff."""
    retry_after_max_s: float = 120.0
    """Longest ``Retry-After`` honoured."""
    template: str = DEFAULT_TEMPLATE
    """The prompt template (:mod:`gradebox.sampling.prompt`)."""

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str], *, model: str | None, **options: Any
    ) -> SampleConfig:
        """The judge's endpoint variables, the sampler's own model.

        Args:
            environ: The environment (read here, at the CLI boundary, only).
            model: ``--model``; ``None`` reads ``GRADEBOX_SAMPLE_MODEL``.
            **options: Any other field of :class:`SampleConfig`.

        Raises:
            SetupError: No endpoint or no model configured.
        """
        found = {name: _first(environ, names) for name, names in ENV_VARS.items()}
        if found["base_url"] is None and found["api_key"] is None:
            raise SetupError(
                "no endpoint to sample from: set GRADEBOX_JUDGE_BASE_URL (and "
                "GRADEBOX_JUDGE_API_KEY if it needs one), as for the judge"
            )
        chosen = model or _first(environ, (MODEL_ENV,))
        if chosen is None:
            raise SetupError(f"no model to sample: give --model or set {MODEL_ENV}")
        return cls(
            base_url=found["base_url"] or DEFAULT_BASE_URL,
            model=chosen,
            api_key=found["api_key"],
            **options,
        )


def _first(environ: Mapping[str, str], names: Sequence[str]) -> str | None:
    return next((v.strip() for n in names if (v := environ.get(n, "")).strip()), None)


def sample_id(task: PublicTask, index: int) -> str:
    """``<task>#<index>``: the id of the task's ``index``-th completion."""
    return f"{task_name(task)}#{index}"


@dataclass(frozen=True, slots=True)
class SampleReport:
    """What a run did."""

    wanted: int
    """Completions the tasks and ``n`` ask for."""
    present: int
    """Of those, already in the output file (not asked again)."""
    written: int
    """Asked and written now."""
    failed: tuple[tuple[str, str], ...]
    """``(sample id, why)`` for each completion given up (a re-run asks again)."""
    requests: int
    """HTTP requests made (retries included)."""
    seconds: float
    """Wall time."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (``gradebox sample --json``)."""
        return {
            "wanted": self.wanted,
            "present": self.present,
            "written": self.written,
            "failed": [{"id": i, "reason": why} for i, why in self.failed],
            "requests": self.requests,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True, slots=True)
class _Job:
    task: PublicTask
    index: int
    prompt: str

    @property
    def id(self) -> str:
        return sample_id(self.task, self.index)


class Sampler:
    """Samples completions for public tasks into a ``samples.jsonl``."""

    def __init__(self, config: SampleConfig, client: openai.OpenAI | None = None) -> None:
        """Check the template and set up the client.

        Args:
            config: Endpoint, model, sampling parameters and retries.
            client: An openai client to use (its own retries are switched off on a
                copy); ``None`` builds one, on first use.

        Raises:
            BadInput: The template is not usable.
        """
        self._config = config
        self._template = check_template(config.template)
        self._client = client.with_options(max_retries=0) if client is not None else None
        self._owned = client is None
        self._redact = Redactor([config.api_key])
        self._lock = threading.Lock()
        self._requests = 0
        self._stop = threading.Event()

    def run(
        self,
        tasks: Sequence[PublicTask],
        store: SampleStore,
        *,
        on_row: Callable[[str], None] | None = None,
    ) -> SampleReport:
        """Ask for every completion ``store`` lacks and append each as it completes.

        Args:
            tasks: The public tasks, in order.
            store: The output file (its ids are skipped).
            on_row: Called with each sample id once its row is durable (progress).

        Returns:
            What was asked, written and given up.

        Raises:
            SetupError: The endpoint refused the requests themselves (key, model).
        """
        started = time.perf_counter()
        jobs = [_Job(t, i, "") for t in tasks for i in range(self._config.n)]
        todo = [
            _Job(j.task, j.index, render(self._template, j.task))
            for j in jobs
            if j.id not in store.ids
        ]
        written, failed = 0, []
        refused: RequestRejected | None = None
        if todo:
            workers = min(self._config.concurrency, len(todo))
            with ThreadPoolExecutor(workers, thread_name_prefix="gradebox-sample") as pool:
                futures = {pool.submit(self._ask, job): job for job in todo}
                for future in as_completed(futures):
                    job = futures[future]
                    outcome = future.result()
                    if isinstance(outcome, dict):
                        store.append(outcome)
                        written += 1
                        if on_row is not None:
                            on_row(job.id)
                        continue
                    failed.append((job.id, _short(str(outcome))))
                    if isinstance(outcome, RequestRejected) and outcome.status_code in _FATAL:
                        refused = refused or outcome
                        self._stop.set()
        if refused is not None:
            raise SetupError(f"the endpoint refuses to sample: {refused}")
        return SampleReport(
            wanted=len(jobs),
            present=len(jobs) - len(todo),
            written=written,
            failed=tuple(sorted(failed)),
            requests=self._requests,
            seconds=time.perf_counter() - started,
        )

    def _ask(self, job: _Job) -> dict[str, Any] | EndpointError:
        if self._stop.is_set():
            return EndpointError("not asked: the endpoint refused an earlier request")
        cfg = self._config
        policy = retrying(
            max_attempts=cfg.max_attempts,
            backoff_initial_s=cfg.backoff_initial_s,
            backoff_max_s=cfg.backoff_max_s,
            retry_after_max_s=cfg.retry_after_max_s,
        )
        try:
            return policy(self._complete, job)
        except EndpointError as exc:
            return exc

    def _complete(self, job: _Job) -> dict[str, Any]:
        cfg = self._config
        seed = None if cfg.seed is None else cfg.seed + job.index
        options: dict[str, Any] = {"temperature": cfg.temperature}
        for name, value in (("top_p", cfg.top_p), ("max_tokens", cfg.max_tokens), ("seed", seed)):
            if value is not None:
                options[name] = value
        if cfg.stop:
            options["stop"] = list(cfg.stop)
        with self._lock:
            self._requests += 1
        try:
            completion = self._openai().chat.completions.create(
                model=cfg.model,
                messages=[{"role": "user", "content": job.prompt}],
                timeout=cfg.timeout_s,
                **options,
            )
        except openai.OpenAIError as exc:
            mapped = map_openai_error(exc)
            self._redact.exception(exc)
            self._redact.exception(mapped)
            raise mapped from exc
        choice = completion.choices[0] if completion.choices else None
        usage = completion.usage
        meta: dict[str, Any] = {
            "task": task_name(job.task),
            "index": job.index,
            "seed": seed,
            "finish_reason": choice.finish_reason if choice is not None else None,
            "tokens": None if usage is None else [usage.prompt_tokens, usage.completion_tokens],
            **{k: v for k, v in options.items() if k != "seed"},
        }
        content = choice.message.content if choice is not None else None
        return {
            "id": job.id,
            "task": task_name(job.task),
            "fn": job.task.fn,
            "reply": self._redact.text(content or ""),
            "model": self._redact.text(completion.model or cfg.model),
            "meta": meta,
        }

    def _openai(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                cfg = self._config
                self._client = openai.OpenAI(
                    base_url=cfg.base_url,
                    api_key=cfg.api_key or _NO_KEY,
                    max_retries=0,
                    timeout=cfg.timeout_s,
                )
            return self._client

    def close(self) -> None:
        """Close the client this sampler built (not one it was given)."""
        if self._owned and self._client is not None:
            self._client.close()


_FATAL = (401, 403, 404)
"""Refusals that every other request would get too."""


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
