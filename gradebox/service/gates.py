"""Patch gates as a service: repositories registered by an admin, gates as async jobs.

- ``PUT /v1/repos/{name}`` (admin): ``{"path": "/srv/repos/calc", "lockfile":
  "requirements.txt", "protect": ["tests/**"]}``: a git repository **on the
  service host**, its lockfile's path in the repository and protected globs
  (both optional). A URL is refused: the service never fetches anything.
- ``GET /v1/repos/{name}`` (admin): what is registered, and the repository's HEAD.
- ``POST /v1/gates`` (any token): ``{"repo": "calc", "base": "main", "patch":
  "diff --git ...", "fail_to_pass": [...], "pass_to_pass": [...] | "auto",
  "intent": "...", "id": "fix-1"}`` gates a patch to a **registered**
  repository, by name; 202 with the gate's id at once. A grader token names a
  repository and sends a diff: no key of the body is a path, a URL or a
  revision option the service would follow (``base`` is a plain revision name).
- ``GET /v1/gates/{id}``: status (``queued``, ``running``, ``done``) and, when
  done, the ``gate.jsonl`` row. Another token's gate is 404, as a missing one.

Gates run one at a time, taken **round-robin between tokens** (the
token whose last gate started longest ago goes next, with its oldest gate): a
token that queues many gates delays another token's next gate by one gate, not
by its whole queue. A queued gate whose token has since been revoked or has
expired is not run: it is settled ``needs_review`` with reason ``not_run``
(:data:`NOT_RUN`). They are counted in the metrics' ``batch`` lane
(``gradebox_grade_stage_seconds{stage="gate"}``, ``gradebox_verdicts_total``);
each token may have :data:`MAX_QUEUED` unfinished gates (429 past it). A gate
left unfinished by a stop is queued again on the next start. A grader sees the
row with the repository's name for its path and infrastructure errors as one
fixed message; an admin sees it in full.

Each gate runs in **a process of its own** (:class:`_GateProcess`), never in the
server's: parsing a patch, scanning it and the static layers hold the GIL for
seconds on a large patch (a 4 MB gate held ``/healthz`` for 2-7 s while they ran
in a thread here). The process is a fresh interpreter (``exec``, not a fork: it
holds none of the server's memory, tokens, database connections or other
tenants' data) with an environment of its own (:func:`child_env`: what git, pip
and the sandbox need, no key or token); the gate's spec and config go in pickled
on its stdin and its row comes back as JSON (the server never unpickles what a
process that read a hostile patch wrote). A worker thread of the server waits
for it. A process that crashes, or outlives :attr:`GateJobs.time_limit_s` (it
and everything it started are killed), settles its gate as an infrastructure
error, and the next gate gets a fresh process. A gate process whose server is
gone kills itself and what it started; a gate whose app stops is killed, and
runs again on the next start.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import queue
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request

from gradebox.patches import GateConfig, GateRow, GateSpec, TestIds
from gradebox.patches.child import BOOTSTRAP
from gradebox.service.auth import Principal
from gradebox.service.bodies import Budget, off_loop, parse_json
from gradebox.service.deps import Admin, Who, body
from gradebox.service.problems import ApiError, Problem
from gradebox.service.state import ServiceState
from gradebox.service.store import Store, iso_time

__all__ = ["MAX_QUEUED", "NOT_RUN", "GateJobs", "child_env", "gate_routes", "time_limit"]

_log = logging.getLogger("gradebox.service")

NOT_RUN = "not run: the token that queued it was revoked or expired"
"""The ``detail`` of a gate settled without running."""
MAX_QUEUED = 10
"""Unfinished gates per token."""
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
_REV = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./~^@{}-]{0,199}$")
_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
_NODE_ID_MAX = 1000
_INFRA = "infrastructure error: the gate could not be run (see the server log)"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS repos (name TEXT PRIMARY KEY, path TEXT NOT NULL, "
    "lockfile TEXT, protect TEXT, updated REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS gates (id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
    "repo TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done')), "
    "created REAL NOT NULL, finished REAL, spec TEXT NOT NULL, row TEXT)",
)
_GATE_KEYS = {"repo", "base", "patch", "fail_to_pass", "pass_to_pass", "intent", "id"}
_ENV_NAMES = frozenset({
    "PATH", "HOME", "LANG", "LANGUAGE", "TZ", "XDG_CACHE_HOME", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
})  # fmt: skip
_ENV_PREFIXES = ("LC_", "PIP_")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
_ENV_BUILD_S = 3600.0
"""pip's two steps of an environment build, each at its limit (:mod:`gradebox.patches.env`)."""
_SLACK_S = 600.0
_TICK_S = 1.0
"""How often a worker waiting for a gate process checks that its app still runs."""
_RESULT_MAX = 16 * 1024 * 1024
"""Most bytes of a gate process's result read back (a row is far smaller)."""


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
                for sql in _SCHEMA:
                    store.execute(sql)
                self._ready_for = store
                if self._thread is None:  # a daemon: a stop never waits for a gate
                    self._thread = threading.Thread(
                        target=self._work, name="gradebox-gate", daemon=True
                    )
                    self._thread.start()
                store.execute("UPDATE gates SET status = 'queued' WHERE status = 'running'")
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
            except _Stopped:
                _log.info("gate %s stopped with the service: it runs again on the next start",
                          gate_id)  # fmt: skip
            except Exception:  # the store closed under it: the gate runs again on the next start
                _log.exception("gate %s was not finished", gate_id)

    def _next(self, store: Store) -> str | None:
        """The next owner's oldest queued gate: round-robin between tokens."""
        queued = store.fetch_all(
            "SELECT id, owner FROM gates WHERE status = 'queued' ORDER BY created, id"
        )
        live = {owner: store.token_live(owner) for owner in {row[1] for row in queued}}
        for gate_id, owner in queued:
            if not live[owner]:
                self._not_run(store, str(gate_id))
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
        found = store.fetch_one("SELECT spec FROM gates WHERE id = ?", (gate_id,))
        if found is None:
            return
        row = GateRow(json.loads(found[0])["id"], "needs_review", "not_run",
                      detail=NOT_RUN).to_row()  # fmt: skip
        store.execute("UPDATE gates SET status = 'done', finished = ?, row = ? "
                      "WHERE id = ? AND status = 'queued'",
                      (time.time(), json.dumps(row), gate_id))  # fmt: skip

    def _run(self, store: Store, gate_id: str) -> None:
        found = store.fetch_one("SELECT spec FROM gates WHERE id = ?", (gate_id,))
        if found is None:
            return
        store.execute("UPDATE gates SET status = 'running' WHERE id = ?", (gate_id,))
        t0 = time.monotonic()
        data = json.loads(found[0])
        try:
            row = self._in_process(store, gate_id, _spec(data))
        except _Stopped:
            raise
        except Exception:  # a gradebox bug must not leave the gate running forever
            _log.exception("gate %s failed", gate_id)
            row = _infra_row(data["id"], "internal error")
        self.state.metrics.stage("gate", "batch", time.monotonic() - t0)
        self.state.metrics.verdict("batch", row.get("verdict"))
        store.execute("UPDATE gates SET status = 'done', finished = ?, row = ? WHERE id = ?",
                      (time.time(), json.dumps(row), gate_id))  # fmt: skip

    def _in_process(self, store: Store, gate_id: str, spec: GateSpec) -> dict[str, Any]:
        """The gate's row, from a process of its own (see the module docstring)."""
        limit = self.time_limit_s if self.time_limit_s is not None else time_limit(self.config)
        with _GateProcess(spec, self.config) as proc:
            self._pid = proc.pid
            try:
                ended = proc.wait(limit, alive=lambda: _open(store))
            finally:
                self._pid = None
        return _settle(gate_id, spec.id, ended, limit)


def time_limit(config: GateConfig) -> float:
    """A generous wall clock for one gate's process under ``config``.

    Every sandboxed run at its limit (each base run and the head run, and as many
    again for their collections), an environment build at pip's limits, and ten
    minutes for the rest: only a stuck gate reaches it.
    """
    runs = 2 * (config.base_runs + 1)
    return runs * config.limits.timeout_s + _ENV_BUILD_S + _SLACK_S


def child_env(environ: Mapping[str, str], tmp: Path) -> dict[str, str]:
    """A gate process's environment: what git, pip and the sandbox need, and no secret.

    Kept from ``environ`` (the server's): ``PATH``, ``HOME``, the locale, CA
    certificates, proxies and pip's own settings (building a test environment
    may need the operator's index and proxy); never a name that says key,
    token, secret, password, credential or auth (``GRADEBOX_JUDGE_API_KEY``,
    ``OPENAI_API_KEY``: service gates do not judge), nor any other ``GRADEBOX_``
    setting. ``TMPDIR`` is ``tmp``: what the gate leaves there goes with it.
    """
    kept = {
        name: value for name, value in environ.items()
        if (name in _ENV_NAMES or name.startswith(_ENV_PREFIXES))
        and not _SECRET_NAME.search(name)
    }  # fmt: skip
    return {**kept, "TMPDIR": str(tmp)}


class _Stopped(RuntimeError):
    """The app stopped while its gate ran (the gate is killed; it runs again on the next start)."""


@dataclass(frozen=True, slots=True)
class _Ended:
    """How a gate's process ended."""

    result: dict[str, Any] | None
    """What it wrote (``None``: nothing readable)."""
    code: int | None
    """Its exit status (``None``: killed at its time limit)."""


class _GateProcess:
    """One gate in a fresh interpreter of its own; a context manager (kills and cleans up)."""

    def __init__(self, spec: GateSpec, config: GateConfig) -> None:
        self._payload = pickle.dumps((spec, config), protocol=pickle.HIGHEST_PROTOCOL)
        self._box = Path(tempfile.mkdtemp(prefix="gradebox-gateproc-"))
        self._box.chmod(0o755)  # the sandbox's uid reaches the gate's scratch dirs below it
        tmp = self._box / "tmp"
        tmp.mkdir(mode=0o755)
        tmp.chmod(0o755)
        # EOF on ``alive`` tells the process that the server is gone: the server holds its
        # write end (never inherited: ``os.pipe`` fds are not) until the process has ended.
        alive, self._alive = os.pipe()
        try:
            with (self._box / "result.json").open("wb") as out:
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", "-c", BOOTSTRAP, _import_path(), str(alive)],
                    stdin=subprocess.PIPE, stdout=out, cwd=tmp, env=child_env(os.environ, tmp),
                    pass_fds=(alive,), start_new_session=True,
                )  # fmt: skip
        except BaseException:
            os.close(self._alive)
            shutil.rmtree(self._box, ignore_errors=True)
            raise
        finally:
            os.close(alive)
        self.pid = self._proc.pid

    def wait(self, limit_s: float, *, alive: Callable[[], bool]) -> _Ended:
        """Give the process its spec; wait for it to end, at most ``limit_s`` seconds.

        Raises:
            _Stopped: ``alive()`` said the app stopped meanwhile (the process is killed).
        """
        deadline = time.monotonic() + limit_s
        payload: bytes | None = self._payload
        while (left := deadline - time.monotonic()) > 0:
            try:
                self._proc.communicate(payload, timeout=min(_TICK_S, left))
            except subprocess.TimeoutExpired:
                payload = None  # given once: communicate() goes on writing what is left
                if not alive():
                    self.kill()
                    raise _Stopped("the service stopped") from None
                continue
            return _Ended(self._result(), self._proc.returncode)
        self.kill()
        return _Ended(None, None)

    def _result(self) -> dict[str, Any] | None:
        with (self._box / "result.json").open("rb") as fh:
            raw = fh.read(_RESULT_MAX + 1)
        try:
            result = json.loads(raw) if len(raw) <= _RESULT_MAX else None
        except ValueError:
            return None
        return result if isinstance(result, dict) else None

    def kill(self) -> None:
        """Kill and reap the process's group (it, its helpers; sandboxes die with their parent)."""
        with contextlib.suppress(ProcessLookupError):  # nothing of the group is left
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.communicate()

    def __enter__(self) -> _GateProcess:
        return self

    def __exit__(self, *_exc: object) -> None:
        # Also after it ended: a crashed process's helpers (git, pip) are still in its group.
        self.kill()
        os.close(self._alive)
        shutil.rmtree(self._box, ignore_errors=True)


def _import_path() -> str:
    """This process's ``sys.path`` (relative entries made absolute), for the gate's to be."""
    return json.dumps([os.path.abspath(entry) for entry in sys.path])


def _settle(gate_id: str, spec_id: str, ended: _Ended, limit_s: float) -> dict[str, Any]:
    """The gate's row from what its process wrote; anything else is an infrastructure error."""
    result = ended.result or {}
    row, message = result.get("row"), str(result.get("message"))[:4000]
    if isinstance(row, dict) and isinstance(row.get("verdict"), str):
        return row
    if result.get("error") == "setup":  # the sandbox or the environment: nothing was decided
        _log.error("gate %s could not run: %s", gate_id, message[:500])
        return _infra_row(spec_id, message[:500])
    if result.get("error") == "internal":
        _log.error("gate %s failed in its process:\n%s", gate_id, message)
        return _infra_row(spec_id, "internal error")
    if ended.code is None:
        why = f"the gate's process ran past its {limit_s:g} s limit and was killed"
    else:
        why = f"the gate's process ended without a row (exit status {ended.code})"
    _log.error("gate %s: %s", gate_id, why)
    return _infra_row(spec_id, why)


def _infra_row(spec_id: str, why: str) -> dict[str, Any]:
    return GateRow(spec_id, "needs_review", "infra_error", infra_error=why).to_row()


def _open(store: Store) -> bool:
    """Whether ``store`` is still open (closed: its app stopped)."""
    try:
        store.fetch_one("SELECT 1")
    except sqlite3.ProgrammingError:
        return False
    return True


def _spec(data: dict[str, Any]) -> GateSpec:
    p2p = data["pass_to_pass"]
    return GateSpec(
        id=data["id"], repo=Path(data["path"]), base=data["base"], patch=data["patch"],
        tests=TestIds(tuple(data["fail_to_pass"]), "auto" if p2p == "auto" else tuple(p2p)),
        intent=data.get("intent"), lockfile=data.get("lockfile"),
        protect=None if data.get("protect") is None else tuple(data["protect"]),
        where=f"gate {data['id']}",
    )  # fmt: skip


def gate_routes(app: FastAPI, state: ServiceState) -> GateJobs:
    """Add the repository and gate routes to ``app``; the queue is ``app.state.gates``."""
    jobs = GateJobs(state)
    app.state.gates = jobs
    _repo_routes(app, state, jobs)
    _gate_routes(app, state, jobs)
    return jobs


def _repo_routes(app: FastAPI, state: ServiceState, jobs: GateJobs) -> None:
    @app.put("/v1/repos/{name}", tags=["gates"])
    async def put_repo(name: str, request: Request, _who: Admin) -> dict[str, Any]:
        """Register a git repository on the service host (a path, never a URL)."""
        raw = await body(request, state)
        data = parse_json(raw, Budget(state.config.parse_budget_s))
        return await off_loop(_register, jobs, name, data, limiter=state.parsers)

    @app.get("/v1/repos/{name}", tags=["gates"])
    async def get_repo(name: str, _who: Admin) -> dict[str, Any]:
        """A registered repository."""
        found = jobs.store().fetch_one(
            "SELECT path, lockfile, protect FROM repos WHERE name = ?", (name,)
        )
        if found is None:
            raise ApiError(404, "not found")
        return {"name": name, "path": found[0], "lockfile": found[1],
                "protect": None if found[2] is None else json.loads(found[2])}  # fmt: skip


def _register(jobs: GateJobs, name: str, data: Any) -> dict[str, Any]:
    problems: list[Problem] = []
    if not _NAME.match(name):
        raise ApiError(422, "a repository name is 1-100 of A-Z a-z 0-9 _ . -")
    if not isinstance(data, dict) or set(data) - {"path", "lockfile", "protect"}:
        raise ApiError(422, "the body is {path, lockfile?, protect?}")
    path = data.get("path")
    if not isinstance(path, str) or "://" in path or not path.startswith("/"):
        raise ApiError(422, "path must be an absolute path on the service host (no URL: "
                       "the service fetches nothing; clone it there first)")  # fmt: skip
    lockfile, protect = data.get("lockfile"), data.get("protect")
    if lockfile is not None and (not isinstance(lockfile, str) or lockfile.startswith("/")
                                 or ".." in lockfile.split("/")):  # fmt: skip
        problems.append(Problem("/lockfile", "a path inside the repository"))
    if protect is not None and not (isinstance(protect, list)
                                    and all(isinstance(p, str) for p in protect)):  # fmt: skip
        problems.append(Problem("/protect", "a list of globs"))
    if problems:
        raise ApiError(422, "invalid repository", problems)
    head = subprocess.run(["git", "-C", path, "rev-parse", "--verify", "-q", "HEAD"],
                          capture_output=True, text=True, check=False, timeout=30)  # fmt: skip
    if head.returncode != 0 or not Path(path, ".git").exists():
        raise ApiError(422, "path is not a git repository with a commit")
    jobs.store().execute(
        "INSERT INTO repos (name, path, lockfile, protect, updated) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET path = excluded.path, lockfile = excluded.lockfile, "
        "protect = excluded.protect, updated = excluded.updated",
        (name, path, lockfile, None if protect is None else json.dumps(protect), time.time()),
    )
    _log.info("repository %s registered", name)
    return {"name": name, "path": path, "lockfile": lockfile, "protect": protect,
            "head": head.stdout.strip()}  # fmt: skip


def _gate_routes(app: FastAPI, state: ServiceState, jobs: GateJobs) -> None:
    @app.post("/v1/gates", tags=["gates"], status_code=202)
    async def submit_gate(request: Request, who: Who) -> dict[str, Any]:
        """Gate a patch to a registered repository: 202 with the gate's id."""
        raw = await body(request, state)
        data = parse_json(raw, Budget(state.config.parse_budget_s))
        return await off_loop(_submit, jobs, who, data, limiter=state.parsers)

    @app.get("/v1/gates/{gate_id}", tags=["gates"])
    async def get_gate(gate_id: str, who: Who) -> dict[str, Any]:
        """A gate's status, and its row once done."""
        return await off_loop(_describe, jobs, who, gate_id, limiter=state.parsers)


def _submit(jobs: GateJobs, who: Principal, data: Any) -> dict[str, Any]:
    store = jobs.store()
    checked = _check_gate(data)
    repo = store.fetch_one("SELECT path, lockfile, protect FROM repos WHERE name = ?",
                           (checked["repo"],))  # fmt: skip
    if repo is None or not who.may_use(checked["repo"]):
        raise ApiError(404, "unknown repository")
    (queued,) = store.fetch_one(
        "SELECT COUNT(*) FROM gates WHERE owner = ? AND status != 'done'", (who.token_id,)
    ) or (0,)
    if queued >= MAX_QUEUED:
        raise ApiError(429, f"at most {MAX_QUEUED} unfinished gates per token",
                       headers={"Retry-After": "30"})  # fmt: skip
    gate_id = secrets.token_hex(12)
    spec = {**checked, "id": checked.get("id") or gate_id, "path": repo[0], "lockfile": repo[1],
            "protect": None if repo[2] is None else json.loads(repo[2])}  # fmt: skip
    store.execute(
        "INSERT INTO gates (id, owner, repo, status, created, spec) "
        "VALUES (?, ?, ?, 'queued', ?, ?)",
        (gate_id, who.token_id, checked["repo"], time.time(), json.dumps(spec)),
    )
    jobs.submit(store, gate_id)
    return {"id": gate_id, "status": "queued", "repo": checked["repo"]}


def _check_gate(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ApiError(422, "the body is a JSON object")
    problems = [Problem("/" + k, "unknown key") for k in sorted(set(data) - _GATE_KEYS)]
    for key in ("repo", "base", "patch"):
        if not isinstance(data.get(key), str) or not data[key]:
            problems.append(Problem("/" + key, "required, a non-empty string"))
    if isinstance(data.get("base"), str) and not _REV.match(data["base"]):
        problems.append(Problem("/base", "a revision name (no leading '-', no spaces)"))
    if "id" in data and not (isinstance(data["id"], str) and _ID.match(data["id"])):
        problems.append(Problem("/id", "1-100 of A-Z a-z 0-9 _ . : -"))
    if "intent" in data and not isinstance(data["intent"], str):
        problems.append(Problem("/intent", "a string"))
    f2p = data.get("fail_to_pass", [])
    p2p = data.get("pass_to_pass", "auto")
    for key, ids in (("fail_to_pass", f2p), ("pass_to_pass", None if p2p == "auto" else p2p)):
        if ids is not None and not (isinstance(ids, list) and all(_node_id(i) for i in ids)):
            problems.append(
                Problem(key, "a list of pytest node ids" + (" or auto" if key[0] == "p" else ""))
            )
    if problems:
        raise ApiError(422, "invalid gate", problems)
    return {"repo": data["repo"], "base": data["base"], "patch": data["patch"],
            "fail_to_pass": list(f2p), "pass_to_pass": p2p, "intent": data.get("intent"),
            "id": data.get("id")}  # fmt: skip


def _node_id(value: Any) -> bool:
    return (isinstance(value, str) and 0 < len(value) <= _NODE_ID_MAX
            and not value.startswith("-") and "\0" not in value)  # fmt: skip


def _describe(jobs: GateJobs, who: Principal, gate_id: str) -> dict[str, Any]:
    found = jobs.store().fetch_one(
        "SELECT owner, repo, status, created, finished, row FROM gates WHERE id = ?", (gate_id,)
    )
    if found is None or (found[0] != who.token_id and not who.is_admin):
        raise ApiError(404, "not found")
    _owner, repo, status, created, finished, raw = found
    row = None if raw is None else json.loads(raw)
    if row is not None and not who.is_admin:
        row = _for_grader(row, repo)
    return {"id": gate_id, "repo": repo, "status": status, "created": iso_time(created),
            "finished": None if finished is None else iso_time(finished), "row": row}  # fmt: skip


def _for_grader(row: dict[str, Any], repo: str) -> dict[str, Any]:
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
