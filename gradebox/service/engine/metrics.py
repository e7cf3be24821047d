"""``GET /metrics``: the service's counters in Prometheus text format, one registry per app.

What is counted, and under which labels:

- ``gradebox_http_requests_total{method,route,status}`` and
  ``gradebox_http_request_seconds{method,route}``: ``route`` is the route's
  template (``/v1/tasks/{task:path}``), never the path a client sent; ``unmatched``
  for a path no route serves.
- ``gradebox_grade_stage_seconds{stage,lane}``: ``front`` (extract and gate),
  ``tests`` (the hidden cases in the sandbox), ``static``, ``judge``; ``lane``
  is ``sync`` (``POST /v1/grade``) or ``batch`` (a run).
- ``gradebox_verdicts_total{lane,verdict}``: the verdict of each row as first
  stored (a deferred judgement may later turn a pass into ``needs_review``).
- ``gradebox_queue_depth{lane}``: synchronous grades admitted and not finished;
  samples of queued or running runs without a result.
- ``gradebox_sandbox_busy{lane}``: samples of each lane holding the sandbox's
  workers now (see :mod:`.lanes`).
- ``gradebox_judge_calls_total{status}``, ``gradebox_judge_cache_hits_total``,
  ``gradebox_judge_requests_total``: judgements by status, those answered from
  the cache, and HTTP requests made to the endpoint (retries included).
- ``gradebox_static_batch_size``: how many samples (of one token) the static
  tools checked together.
- ``gradebox_sandbox_worker_recycles_total``: sandbox workers thrown away and
  replaced (one could not be cleaned after its candidate, was tainted, died or
  went silent): :attr:`sandbox.runner.Sandbox.recycles`, read at each scrape
  (a collector, so no grading path has to report it and a recycle outside a
  grade, as in the self-check, counts too). It counts from when the sandbox
  opened: a sandbox handed to the app by its caller may have counted before.
- ``gradebox_sandbox_replays_total``: plays the sandbox could not time and played
  again (a worker silent past the candidate's limit plus grace, a timeout decided
  from a late look): :attr:`sandbox.runner.Sandbox.replays`, read the same way.
  Honest candidates move it only on a stalled host: a rising count says the
  machine stops giving the sandbox CPU for seconds.

Every label value comes from a closed vocabulary or a route template: no
metric can carry a task name, a sample, a hidden or expected value, a token or
the judge's key. The recycle count is one number for the whole sandbox: it says
that some candidate broke a worker, not whose (the route, verdict and stage
series are admin-only for the same reason, see :mod:`.app`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from gradebox.service.engine.lanes import Lane

__all__ = ["CONTENT_TYPE", "STAGES", "Metrics"]

STAGES = ("front", "tests", "static", "judge")
"""The stages timed per sample."""
_VERDICTS = frozenset({"pass", "fail", "needs_review"})
_JUDGE_STATUSES = frozenset({"scored", "needs_review", "unavailable", "skipped", "pending"})
_METHODS = frozenset({"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"})
_BATCH_BUCKETS = (1, 2, 4, 8, 16)
_STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """The app's metrics in their own registry (so that many apps in one process never clash)."""

    def __init__(self) -> None:
        """Create every metric, at zero."""
        r = self.registry = CollectorRegistry()
        self._requests = Counter(
            "gradebox_http_requests",
            "HTTP requests answered.",
            ["method", "route", "status"],
            registry=r,
        )
        self._request_s = Histogram(
            "gradebox_http_request_seconds",
            "Time to answer an HTTP request.",
            ["method", "route"],
            registry=r,
        )
        self._stage_s = Histogram(
            "gradebox_grade_stage_seconds",
            "Time per sample in each grading stage.",
            ["stage", "lane"],
            buckets=_STAGE_BUCKETS,
            registry=r,
        )
        self._verdicts = Counter(
            "gradebox_verdicts", "Rows stored, by verdict.", ["lane", "verdict"], registry=r
        )
        self._depth = Gauge(
            "gradebox_queue_depth",
            "Work admitted and not finished, per lane.",
            ["lane"],
            registry=r,
        )
        self._busy = Gauge(
            "gradebox_sandbox_busy",
            "Samples holding the sandbox's workers, per lane.",
            ["lane"],
            registry=r,
        )
        self._judge_metrics(r)
        self._recycles = _SandboxCount(
            "gradebox_sandbox_worker_recycles",
            "Sandbox workers thrown away and replaced (could not be cleaned, tainted, "
            "died or went silent).",
        )
        self._replays = _SandboxCount(
            "gradebox_sandbox_replays",
            "Plays the sandbox could not time and played again (a silent worker, a "
            "timeout decided from a late look).",
        )
        r.register(self._recycles)
        r.register(self._replays)

    def _judge_metrics(self, r: CollectorRegistry) -> None:
        self._judge = Counter(
            "gradebox_judge_calls", "Judgements, by status.", ["status"], registry=r
        )
        self._judge_hits = Counter(
            "gradebox_judge_cache_hits", "Judgements answered from the cache.", registry=r
        )
        self._judge_requests = Counter(
            "gradebox_judge_requests",
            "HTTP requests to the judge endpoint, retries included.",
            registry=r,
        )
        self._static_batch = Histogram(
            "gradebox_static_batch_size",
            "Samples checked together by the static tools (one token's samples per batch).",
            buckets=_BATCH_BUCKETS,
            registry=r,
        )

    def recycles(self, read: Callable[[], int]) -> None:
        """Read the sandbox's worker recycles from ``read`` at each scrape (0 until set)."""
        self._recycles.read = read

    def replays(self, read: Callable[[], int]) -> None:
        """Read the sandbox's replayed plays from ``read`` at each scrape (0 until set)."""
        self._replays.read = read

    def gauges(self, lane: Lane, *, depth: Callable[[], float], busy: Callable[[], float]) -> None:
        """Read a lane's queue depth and sandbox use from ``depth`` and ``busy`` at each scrape."""
        self._depth.labels(lane=lane).set_function(depth)
        self._busy.labels(lane=lane).set_function(busy)

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        """One HTTP request answered."""
        method = method if method in _METHODS else "OTHER"
        self._requests.labels(method=method, route=route, status=str(status)).inc()
        self._request_s.labels(method=method, route=route).observe(seconds)

    def stage(self, stage: str, lane: Lane, seconds: float) -> None:
        """One sample spent ``seconds`` in ``stage``."""
        self._stage_s.labels(stage=stage, lane=lane).observe(seconds)

    def verdict(self, lane: Lane, verdict: object) -> None:
        """One row stored with ``verdict``."""
        self._verdicts.labels(lane=lane, verdict=verdict if verdict in _VERDICTS else "other").inc()

    def judged(self, status: str, *, cache_hit: bool, attempts: int) -> None:
        """One judgement finished."""
        self._judge.labels(status=status if status in _JUDGE_STATUSES else "other").inc()
        if cache_hit:
            self._judge_hits.inc()
        self._judge_requests.inc(max(0, attempts))

    def static_batch(self, size: int) -> None:
        """The static tools checked ``size`` samples in one batch."""
        self._static_batch.observe(size)

    def render(self) -> bytes:
        """The text exposition (reads the gauges: call it off the event loop)."""
        return generate_latest(self.registry)


class _SandboxCount(Collector):
    """A counter the sandbox keeps, read from it at scrape time (no labels)."""

    def __init__(self, name: str, documentation: str) -> None:
        self.name = name
        self.documentation = documentation
        self.read: Callable[[], int] = lambda: 0

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(self.name, self.documentation, value=self.read())
