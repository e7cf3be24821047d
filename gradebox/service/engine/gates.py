"""The service's gate queue: repositories, gates queued per token, one gate process at a time.

Round-robin between tokens, revoked tokens' gates settled unrun, a stop's gates
queued again: see :mod:`gradebox.service.api.gates`. A gate runs in one of the
lanes' batch places (:meth:`~gradebox.service.engine.lanes.Lanes.gate`): it waits
for one as a run's sample does, so gates, runs and grades together stay within
the server's ``--workers``.
"""

from __future__ import annotations

import json
import logging
import queue
import secrets
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gradebox.patches import GateConfig, GateRow, GateSpec
from gradebox.service.engine.auth import Principal
from gradebox.service.engine.gateprocess import (
    GateProcess,
    Stopped,
    gate_spec,
    infra_row,
    settle,
    time_limit,
)
from gradebox.service.engine.state import ServiceState
from gradebox.service.problems import ApiError
from gradebox.service.rows import JsonObject
from gradebox.service.store import Store, iso_time

__all__ = ["MAX_QUEUED", "NOT_RUN", "GateJobs", "describe", "register", "repo", "submit"]

_log = logging.getLogger("gradebox.service")

NOT_RUN = "not run: the token that queued it was revoked or expired"
"""The ``detail`` of a gate settled without running."""
MAX_QUEUED = 10
"""Unfinished gates per token."""
_INFRA = "infrastructure error: the gate could not be run (see the server log)"


@dataclass
class GateJobs:
    """The gate queue of one app: its config, its worker thread, its tables."""

    state: ServiceState
    """The app's state (store, metrics)."""
    config: GateConfig = field(default_factory=GateConfig)
    """How gates run (environment cache, limits, base runs, static layers)."""
    time_limit_s: float | None = None
    """Wall clock of one gate's process (``None``: :func:`time_limit` of :attr:`config`); past
    it the process and everything it started are killed: an infrastructure error."""
    _wake: queue.Queue[Store] = field(default_factory=queue.Queue)
    """Told each time a gate is queued (the worker then takes every queued gate)."""
    _turns: dict[str, int] = field(default_factory=dict)
    """Per owner, the number of its last gate started (none yet: it goes first)."""
    _started: int = 0
    _thread: threading.Thread | None = None
    _ready_for: Store | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pid: int | None = None

    @property
    def running_pid(self) -> int | None:
        """The process id of the gate running now (``None``: none is)."""
        return self._pid

    def store(self) -> Store:
        """The store, with the gate tables made and unfinished gates queued again."""
        store = self.state.store
        with self._lock:
            if self._ready_for is not store:
                store.open_gates()
                self._ready_for = store
                if self._thread is None:  # a daemon: a stop never waits for a gate
                    self._thread = threading.Thread(
                        target=self._work, name="gradebox-gate", daemon=True
                    )
                    self._thread.start()
                self._wake.put(store)
        return store

    def submit(self, store: Store, gate_id: str) -> None:
        """Queue one stored gate (``gate_id`` is in the table, ``queued``)."""
        self._wake.put(store)

    def _work(self) -> None:
        while True:
            store = self._wake.get()
            gate_id = None
            try:
                while (gate_id := self._next(store)) is not None:
                    self._run(store, gate_id)
            except Stopped:
                _log.info("gate %s stopped with the service: it runs again on the next start",
                          gate_id)  # fmt: skip
            except Exception:  # the store closed under it: the gate runs again on the next start
                _log.exception("gate %s was not finished", gate_id)

    def _next(self, store: Store) -> str | None:
        """The next owner's oldest queued gate: round-robin between tokens."""
        queued = store.queued_gates()
        live = {owner: store.token_live(owner) for owner in {row[1] for row in queued}}
        for gate_id, owner in queued:
            if not live[owner]:
                self._not_run(store, gate_id)
        queued = [row for row in queued if live[row[1]]]
        if not queued:
            return None
        # min() keeps the first of equals: among owners tied for their turn, the one
        # with the oldest gate; for that owner, its oldest gate.
        gate_id, owner = min(queued, key=lambda row: self._turns.get(row[1], -1))
        self._started += 1
        self._turns[owner] = self._started
        return str(gate_id)

    def _not_run(self, store: Store, gate_id: str) -> None:
        """Settle a queued gate whose token was revoked or expired: not run, nothing decided."""
        found = store.gate_spec(gate_id)
        if found is None:
            return
        row = GateRow(json.loads(found)["id"], "needs_review", "not_run", detail=NOT_RUN).to_row()
        store.finish_gate(gate_id, json.dumps(row), only_queued=True)

    def _run(self, store: Store, gate_id: str) -> None:
        found = store.gate_spec(gate_id)
        if found is None:
            return
        store.start_gate(gate_id)
        t0 = time.monotonic()
        data = json.loads(found)
        try:
            row = self._in_process(store, gate_id, gate_spec(data))
        except Stopped:
            raise
        except Exception:  # a gradebox bug must not leave the gate running forever
            _log.exception("gate %s failed", gate_id)
            row = infra_row(data["id"], "internal error")
        self.state.metrics.stage("gate", "batch", time.monotonic() - t0)
        self.state.metrics.verdict("batch", row.get("verdict"))
        store.finish_gate(gate_id, json.dumps(row))

    def _in_process(self, store: Store, gate_id: str, spec: GateSpec) -> JsonObject:
        """The gate's row, from a process of its own (see the module docstring)."""
        limit = self.time_limit_s if self.time_limit_s is not None else time_limit(self.config)
        with self.state.lanes.gate(alive=store.is_open), GateProcess(spec, self.config) as proc:
            self._pid = proc.pid
            try:
                ended = proc.wait(limit, alive=store.is_open)
            finally:
                self._pid = None
        return settle(gate_id, spec.id, ended, limit)


def register(
    jobs: GateJobs, name: str, path: str, lockfile: str | None, protect: list[str] | None
) -> JsonObject:
    """Register repository ``name`` (checked by the caller) once ``path`` is a git repository."""
    head = subprocess.run(["git", "-C", path, "rev-parse", "--verify", "-q", "HEAD"],
                          capture_output=True, text=True, check=False, timeout=30)  # fmt: skip
    if head.returncode != 0 or not Path(path, ".git").exists():
        raise ApiError(422, "path is not a git repository with a commit")
    jobs.store().put_repo(name, path, lockfile, protect)
    _log.info("repository %s registered", name)
    return {"name": name, "path": path, "lockfile": lockfile, "protect": protect,
            "head": head.stdout.strip()}  # fmt: skip


def repo(jobs: GateJobs, name: str) -> JsonObject:
    """A registered repository (404 when it is not)."""
    found = jobs.store().repo(name)
    if found is None:
        raise ApiError(404, "not found")
    return {"name": name, "path": found[0], "lockfile": found[1], "protect": found[2]}


def submit(jobs: GateJobs, who: Principal, checked: dict[str, Any]) -> JsonObject:
    """Queue a checked gate on a repository ``who`` may use: 202's body (404, 429 else)."""
    store = jobs.store()
    found = store.repo(checked["repo"])
    if found is None or not who.may_use(checked["repo"]):
        raise ApiError(404, "unknown repository")
    if store.unfinished_gates(who.token_id) >= MAX_QUEUED:
        raise ApiError(429, f"at most {MAX_QUEUED} unfinished gates per token",
                       headers={"Retry-After": "30"})  # fmt: skip
    gate_id = secrets.token_hex(12)
    spec = {**checked, "id": checked.get("id") or gate_id, "path": found[0],
            "lockfile": found[1], "protect": found[2]}  # fmt: skip
    store.add_gate(gate_id, who.token_id, checked["repo"], json.dumps(spec))
    jobs.submit(store, gate_id)
    return {"id": gate_id, "status": "queued", "repo": checked["repo"]}


def describe(jobs: GateJobs, who: Principal, gate_id: str) -> JsonObject:
    """A gate's status and row, as ``who`` may see it (404 for another token's)."""
    found = jobs.store().gate(gate_id)
    if found is None or (found[0] != who.token_id and not who.is_admin):
        raise ApiError(404, "not found")
    _owner, repo, status, created, finished, raw = found
    row = None if raw is None else json.loads(raw)
    if row is not None and not who.is_admin:
        row = _for_grader(row, repo)
    return {"id": gate_id, "repo": repo, "status": status, "created": iso_time(created),
            "finished": None if finished is None else iso_time(finished), "row": row}  # fmt: skip


def _for_grader(row: dict[str, Any], repo: str) -> JsonObject:
    """The row without the service host's paths or infrastructure details."""
    path = row.get("repo")
    text = json.dumps({**row, "repo": repo})
    if isinstance(path, str) and path:
        text = text.replace(json.dumps(path)[1:-1], repo)
    out: dict[str, Any] = json.loads(text)
    if out.get("infra_error"):
        out["infra_error"] = _INFRA
    out.pop("timing", None)
    return out
