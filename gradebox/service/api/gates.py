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

import re
from typing import Annotated

from fastapi import APIRouter, Path, Request

from gradebox.service.api.bodies import Budget, off_loop, parse_json
from gradebox.service.api.deps import Admin, State, Who, body
from gradebox.service.api.openapi_bodies import json_body
from gradebox.service.api.responses import ADMIN, BODY, WHO, errors
from gradebox.service.engine import gates
from gradebox.service.engine.gateprocess import child_env
from gradebox.service.engine.gates import MAX_QUEUED, NOT_RUN, GateJobs
from gradebox.service.problems import ApiError, Problem
from gradebox.service.rows import JsonObject

__all__ = ["MAX_QUEUED", "NOT_RUN", "GateJobs", "child_env", "router"]

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
_REV = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./~^@{}-]{0,199}$")
_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
_NODE_ID_MAX = 1000
_GATE_KEYS = {"repo", "base", "patch", "fail_to_pass", "pass_to_pass", "intent", "id"}

router = APIRouter(tags=["gates"])

_NODE_IDS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": _NODE_ID_MAX,
              "pattern": "^[^-\\x00][^\\x00]*$"},
    "description": "pytest node ids.",
}  # fmt: skip
_GATE_BODY = json_body(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["repo", "base", "patch"],
        "properties": {
            "repo": {"type": "string", "minLength": 1, "description": "A registered repository."},
            "base": {"type": "string", "pattern": _REV.pattern, "description": "A revision name."},
            "patch": {"type": "string", "minLength": 1, "description": "A unified diff."},
            "fail_to_pass": _NODE_IDS,
            "pass_to_pass": {"anyOf": [_NODE_IDS, {"const": "auto"}], "default": "auto"},
            "intent": {"type": "string"},
            "id": {"type": "string", "pattern": _ID.pattern},
        },
    }
)
_REPO_BODY = json_body(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["path"],
        "properties": {
            "path": {
                "type": "string",
                "pattern": "^/",
                "not": {"pattern": "://"},
                "description": "An absolute path on the service host to a git repository with "
                "a commit (never a URL).",
            },
            "lockfile": {
                "type": ["string", "null"],
                "not": {"anyOf": [{"pattern": "^/"}, {"pattern": "(^|/)\\.\\.(/|$)"}]},
                "description": "The lockfile's path inside the repository.",
            },
            "protect": {"type": ["array", "null"], "items": {"type": "string"},
                        "description": "Protected globs."},
        },
    }
)  # fmt: skip
RepoName = Annotated[str, Path(json_schema_extra={"pattern": _NAME.pattern})]
"""A repository's name (documented here, checked by :func:`_check_repo`)."""


@router.put("/v1/repos/{name}", openapi_extra=_REPO_BODY, responses=errors(*ADMIN, *BODY))
async def put_repo(name: RepoName, request: Request, _who: Admin, state: State) -> JsonObject:
    """Register a git repository on the service host (a path, never a URL)."""
    raw = await body(request, state)
    data = parse_json(raw, Budget(state.config.parse_budget_s))
    path, lockfile, protect = _check_repo(name, data)
    jobs = _jobs(request)
    return await off_loop(
        gates.register, jobs, name, path, lockfile, protect, limiter=state.parsers
    )


@router.get("/v1/repos/{name}", responses=errors(*ADMIN, 404))
async def get_repo(name: RepoName, request: Request, _who: Admin) -> JsonObject:
    """A registered repository."""
    return gates.repo(_jobs(request), name)


@router.post(
    "/v1/gates",
    status_code=202,
    openapi_extra=_GATE_BODY,
    responses=errors(*WHO, *BODY, 404, 429),
)
async def submit_gate(request: Request, who: Who, state: State) -> JsonObject:
    """Gate a patch to a registered repository: 202 with the gate's id."""
    raw = await body(request, state)
    checked = _check_gate(parse_json(raw, Budget(state.config.parse_budget_s)))
    return await off_loop(gates.submit, _jobs(request), who, checked, limiter=state.parsers)


@router.get("/v1/gates/{gate_id}", responses=errors(*WHO, 404))
async def get_gate(gate_id: str, request: Request, who: Who, state: State) -> JsonObject:
    """A gate's status, and its row once done."""
    return await off_loop(gates.describe, _jobs(request), who, gate_id, limiter=state.parsers)


def _jobs(request: Request) -> GateJobs:
    jobs: GateJobs = request.app.state.gates
    return jobs


def _check_repo(name: str, data: object) -> tuple[str, str | None, list[str] | None]:
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
    return path, lockfile, protect


def _check_gate(data: object) -> JsonObject:
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
    for key, ids in (("fail_to_pass", f2p), ("pass_to_pass", [] if p2p == "auto" else p2p)):
        if not (isinstance(ids, list) and all(_node_id(i) for i in ids)):  # null is no list
            auto = " or auto" if key[0] == "p" else ""
            problems.append(Problem("/" + key, "a list of pytest node ids" + auto))
    if problems:
        raise ApiError(422, "invalid gate", problems)
    return {"repo": data["repo"], "base": data["base"], "patch": data["patch"],
            "fail_to_pass": list(f2p), "pass_to_pass": p2p, "intent": data.get("intent"),
            "id": data.get("id")}  # fmt: skip


def _node_id(value: object) -> bool:
    return (isinstance(value, str) and 0 < len(value) <= _NODE_ID_MAX
            and not value.startswith("-") and "\0" not in value)  # fmt: skip
