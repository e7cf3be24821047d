"""A persistent reply cache: SQLite in WAL mode, keyed by the full request.

The key is the SHA-256 of a canonical JSON document holding everything that
decides the reply: cache format, endpoint base URL, model, each message's role
and SHA-256, the reply schema's SHA-256, the rubric's name, version and content
digest, the code's SHA-256, the seed, the temperature (``None`` when the endpoint
refused one and its default is used), the response-format rung, the other body
fields (token cap, ``extra_body``) and, for ``--judge-repeat``, the repeat's
index: the N replies of a repeated judgement are N entries. Change any of them
and the request is new.

A third table keeps what probing an endpoint found (:meth:`ReplyCache.probe`),
by endpoint, model and request options.

What is stored is the reply as received (:class:`~judge.types.Reply`), redacted
of the API key (:mod:`judge.redact`: nothing the endpoint quotes of it is written), with
the request that was sent beside it for audit (:meth:`ReplyCache.request`).
Beside it, in a second table, the *checked* result (the row's ``judge`` field
without latency, cache hit and attempts) under an *input key*
(:func:`input_key`): a digest of the request's inputs that costs a few
microseconds to compute, where the request key needs the prompt rendered. A
re-grade looks its items up by input key in a few batched queries and builds
the results from the stored fields, with no rendering and no re-validation.

The input key covers everything a stored result depends on: endpoint, model,
seed, temperature, the rubric's name, version and digest, the reply schema's
digest, the prompt templates' digest, the item's public fields and code, the
cache formats, and a digest of the source of the modules that render prompts
and check replies (:func:`logic_sha256`). Change any of them -- a stricter
checker included -- and the stored result is not served: the lookup falls back
to the request key, re-checks the stored reply (a reply that broke protocol
stays ``needs_review`` at no cost) and stores the fresh result under the new
input key. A stored result that does not decode is treated the same way. Only
completed exchanges are stored; an unavailable endpoint stores nothing.

One connection, shared by the judge's threads under a lock (SQLite calls are
short next to an HTTP round trip); WAL lets other processes read meanwhile.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from judge.types import Reply

__all__ = [
    "CACHE_FORMAT",
    "RESULT_FORMAT",
    "ReplyCache",
    "StoredResult",
    "cache_key",
    "input_context",
    "input_key",
    "logic_sha256",
]

CACHE_FORMAT = 2
"""Bumped when the request key's contents or the stored reply change shape."""
RESULT_FORMAT = 1
"""Bumped when the input key's contents or the stored result change shape."""
_LOOKUP_CHUNK = 500
"""Input keys per ``SELECT ... IN (...)`` (well under SQLite's variable limit)."""

StoredResult = tuple[str, str]
"""A stored result: its request key and the checked result as JSON text."""


_LOGIC_MODULES = (
    "judge.cache",
    "judge.core",
    "judge.neutralize",
    "judge.prompt",
    "judge.redact",
    "judge.reply",
    "judge.types",
)
"""The modules whose code decides a stored result: rendering, redacting, checking, building."""


@functools.cache
def logic_sha256() -> str:
    """SHA-256 of the source of :data:`_LOGIC_MODULES`, part of every input key.

    An edit to how prompts are rendered or replies are checked makes stored
    results stale without a format bump; the stored replies are checked again.
    """
    digest = hashlib.sha256()
    for name in _LOGIC_MODULES:
        spec = importlib.util.find_spec(name)
        try:
            source = Path(str(spec.origin if spec else None)).read_bytes()
        except OSError:  # no source file (frozen): never reuse a result across processes
            source = repr(time.time_ns()).encode()
        digest.update(name.encode() + b"\0" + hashlib.sha256(source).digest())
    return digest.hexdigest()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    reply TEXT NOT NULL,
    request TEXT NOT NULL,
    created REAL NOT NULL
)
"""
_PROBES_SCHEMA = """
CREATE TABLE IF NOT EXISTS probes (
    key TEXT PRIMARY KEY,
    report TEXT NOT NULL,
    created REAL NOT NULL
)
"""
_RESULTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    input_key TEXT PRIMARY KEY,
    request_key TEXT NOT NULL,
    result TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(
    *,
    base_url: str,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    schema_sha256: str,
    rubric: tuple[str, str, str],
    code: str,
    seed: int,
    temperature: float | None,
    rung: str = "json_schema",
    extras: Mapping[str, Any] | None = None,
    repeat: int = 0,
    scope: str = "",
) -> str:
    """The cache key of one request.

    Args:
        base_url: The endpoint.
        model: The model asked.
        messages: The chat messages (structured-output form); each is hashed.
        schema_sha256: SHA-256 of the reply schema (:attr:`judge.reply.ReplyChecker.schema_sha256`).
        rubric: The rubric's name, version and digest.
        code: The candidate code as extracted (hashed).
        seed: The seed sent.
        temperature: The temperature sent; ``None`` when none is (the server's default).
        rung: The response-format rung asked for.
        extras: Other body fields sent (token cap, ``extra_body``).
        repeat: Which repeat of a ``--judge-repeat`` judgement (0 for a single one).
        scope: Who may share this entry (:attr:`judge.types.JudgeItem.cache_scope`);
            ``""`` (everyone) keeps the keys of earlier versions.

    Returns:
        64 hex digits.
    """
    document: dict[str, Any] = {
        "format": CACHE_FORMAT,
        "rung": rung,
        "extras": dict(extras or {}),
        "repeat": repeat,
        "base_url": base_url.rstrip("/"),
        "model": model,
        "messages": [[m["role"], _sha256(str(m["content"]))] for m in messages],
        "schema_sha256": schema_sha256,
        "rubric": list(rubric),
        "code_sha256": _sha256(code),
        "seed": seed,
        "temperature": temperature,
    }
    if scope:
        document["scope"] = scope
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return _sha256(canonical)


def input_context(
    *,
    base_url: str,
    model: str,
    seed: int,
    temperature: float | None,
    rubric: tuple[str, str, str],
    schema_sha256: str,
    templates_sha256: str,
    rung: str = "json_schema",
    extras: Mapping[str, Any] | None = None,
) -> str:
    """The digest of an input key's per-judge, per-rubric part (computed once per rubric).

    Args:
        base_url: The endpoint.
        model: The model asked.
        seed: The seed sent.
        temperature: The temperature sent.
        rubric: The rubric's name, version and digest.
        schema_sha256: SHA-256 of the reply schema.
        templates_sha256: SHA-256 of the rubric's prompt templates.
        rung: The response-format rung asked for.
        extras: Other body fields sent (token cap, ``extra_body``).

    Returns:
        64 hex digits, to pass to :func:`input_key`.
    """
    document = {
        "rung": rung,
        "extras": dict(extras or {}),
        "kind": "input",
        "format": CACHE_FORMAT,
        "result_format": RESULT_FORMAT,
        "logic_sha256": logic_sha256(),
        "base_url": base_url.rstrip("/"),
        "model": model,
        "seed": seed,
        "temperature": temperature,
        "rubric": list(rubric),
        "schema_sha256": schema_sha256,
        "templates_sha256": templates_sha256,
    }
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return _sha256(canonical)


def input_key(
    context: str, *, fn: str, signature: str, spec: str, code: str, scope: str = ""
) -> str:
    """The input key of one item: cheap, and without rendering the prompt.

    Args:
        context: :func:`input_context` of the judge and rubric.
        fn: The function name asked for.
        signature: The public signature.
        spec: The public specification.
        code: The candidate code as extracted.
        scope: Who may share this entry (:attr:`judge.types.JudgeItem.cache_scope`);
            ``""`` (everyone) keeps the keys of earlier versions.

    Returns:
        64 hex digits.
    """
    digest = hashlib.sha256(context.encode("ascii"))
    texts = (fn, signature, spec, code, scope) if scope else (fn, signature, spec, code)
    for text in texts:  # length-prefixed: no ambiguous joins
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _lookup_sql(count: int) -> str:
    """The batched lookup of ``count`` input keys (only ``?`` marks are interpolated)."""
    marks = ",".join("?" * count)
    return (
        "SELECT results.input_key, results.request_key, results.result "
        "FROM results JOIN replies ON replies.key = results.request_key "
        "WHERE results.input_key IN (" + marks + ")"
    )


class ReplyCache:
    """Replies by request key, in one SQLite file."""

    def __init__(self, path: Path) -> None:
        """Open (and create) the cache at ``path``.

        Args:
            path: The SQLite file; its directory is created if missing.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute(_SCHEMA)
        self._db.execute(_RESULTS_SCHEMA)
        self._db.execute(_PROBES_SCHEMA)

    def get(self, key: str) -> Reply | None:
        """The stored reply for ``key``, if any."""
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else Reply.from_json(json.loads(row[0]))

    def put(
        self,
        key: str,
        reply: Reply,
        request: Mapping[str, Any],
        *,
        result: tuple[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """Store ``reply`` under ``key`` (replacing any earlier one), with its request for audit.

        Args:
            key: The request's cache key.
            reply: The reply as received.
            request: What was sent (model, messages, seed...), kept for a human to read.
            result: The input key and the checked result, stored in the same transaction.
        """
        now = time.time()
        values = (key, json.dumps(reply.to_json()), json.dumps(request), now)
        with self._lock:  # JSON is ASCII here, so lone surrogates survive
            self._db.execute("BEGIN")
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO replies (key, reply, request, created) "
                    "VALUES (?, ?, ?, ?)",
                    values,
                )
                if result is not None:
                    self._put_results([(result[0], key, result[1])], now)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def results(self, input_keys: Collection[str]) -> dict[str, StoredResult]:
        """The stored results of ``input_keys``, in a few queries (absent keys are left out).

        Only results whose reply is still stored are returned, so every result
        served can be audited with :meth:`request`.

        Args:
            input_keys: Input keys (:func:`input_key`).

        Returns:
            Input key to (request key, result JSON text).
        """
        keys = list(dict.fromkeys(input_keys))
        found: dict[str, StoredResult] = {}
        with self._lock:
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start : start + _LOOKUP_CHUNK]
                rows = self._db.execute(_lookup_sql(len(chunk)), chunk).fetchall()
                found.update((str(k), (str(r), str(v))) for k, r, v in rows)
        return found

    def put_results(self, rows: Iterable[tuple[str, str, Mapping[str, Any]]]) -> None:
        """Store checked results (input key, request key, result) in one transaction.

        Args:
            rows: What to store; an earlier result under the same input key is replaced.
        """
        rows = list(rows)
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._put_results(rows, time.time())
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _put_results(self, rows: Iterable[tuple[str, str, Mapping[str, Any]]], now: float) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO results (input_key, request_key, result, created) "
            "VALUES (?, ?, ?, ?)",
            [(i, r, json.dumps(dict(v), separators=(",", ":")), now) for i, r, v in rows],
        )

    def probe(self, key: str) -> tuple[str, float] | None:
        """A stored probe report (JSON text) and when it was stored, if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT report, created FROM probes WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else (str(row[0]), float(row[1]))

    def put_probe(self, key: str, report: Mapping[str, Any]) -> None:
        """Store a probe report under ``key`` (endpoint, model, options), replacing any."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO probes (key, report, created) VALUES (?, ?, ?)",
                (key, json.dumps(dict(report)), time.time()),
            )

    def request(self, key: str) -> dict[str, Any] | None:
        """The request stored with ``key``'s reply: what the judge was shown."""
        with self._lock:
            row = self._db.execute("SELECT request FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
