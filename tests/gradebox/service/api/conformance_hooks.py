"""schemathesis hooks for the conformance run: what a JSON schema cannot say about a valid request.

schemathesis checks that a schema-valid request is accepted (``positive_data_acceptance``).
Some of what the server checks depends on its state or on formats JSON Schema has no
word for; for *positive* cases only, these hooks fill in exactly that, and nothing the
schema can say:

- a sample names a task that is registered on this server (``CONFORMANCE_TASK``), with
  unique ids in a run, and asks only for layers this server runs (none);
- a task body's public ``task`` equals the path's id, its rubric exists, its cases'
  ``error`` names a real exception class, their values decode as tagged JSON, and a
  lockfile it carries parses as its format;
- a rubric body is a rubric file's TOML (``CONFORMANCE_RUBRIC``) named as the path says;
- a repository's path is a git repository on the host (``CONFORMANCE_REPO``).

schemathesis checks a changed case against the schema again, so a repair that broke
the schema would turn the case negative (and the server's acceptance into a failure).
Negative cases are sent as generated.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import schemathesis
from schemathesis.core.parameters import ParameterLocation


@schemathesis.serializer("application/toml")
def toml(_ctx: Any, value: object) -> bytes:
    """A rubric body goes as text (any string is a TOML document to send)."""
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


@schemathesis.hook
def before_call(_ctx: Any, case: Any, **_kwargs: Any) -> None:
    """Repair positive bodies and queries for what the schema cannot say (module docstring)."""
    if case.meta is None:
        return
    label = f"{case.method.upper()} {case.operation.path}"
    if _positive(case, ParameterLocation.QUERY) and label == "POST /v1/runs":
        case.query = {}  # the layers: this server runs neither static nor judge
    if not _positive(case, ParameterLocation.BODY):
        return
    repair = _REPAIRS.get(label)
    if repair is not None:
        repair(case)


def _positive(case: Any, location: ParameterLocation) -> bool:
    info = case.meta.components.get(location)
    return info is not None and info.mode.is_positive


def _sample(sample: Any, index: int) -> Any:
    if isinstance(sample, dict):
        sample.pop("fn", None)
        sample.pop("static", None)
        sample.pop("judge", None)
        sample["task"] = os.environ["CONFORMANCE_TASK"]
        if "id" in sample:
            sample["id"] = f"s{index}"
    return sample


def _grade(case: Any) -> None:
    _sample(case.body, 0)


def _run(case: Any) -> None:
    if isinstance(case.body, list):
        case.body = [_sample(s, i) for i, s in enumerate(case.body)]
    elif isinstance(case.body, str):  # JSON Lines: any text is a string, few are samples
        sample = {"task": os.environ["CONFORMANCE_TASK"], "code": case.body[:100]}
        case.body = json.dumps(sample) + "\n"


def _case(case: Any) -> None:
    if not isinstance(case, dict):
        return
    case.pop("task", None)
    case.pop("fn", None)
    case["args"] = []
    case.pop("kwargs", None)
    if "error" in case:
        case["error"] = "ValueError"
    if "expect" in case:
        case["expect"] = 0


def _task(case: Any) -> None:
    body = case.body
    if not isinstance(body, dict):
        return
    public = body.setdefault("public", {})
    if isinstance(public, dict):
        public.pop("task", None)
        public.pop("rubric", None)
        public["fn"] = "f"
        for example in public.get("examples") or []:
            _case(example)
    for hidden in body.get("hidden") or []:
        _case(hidden)
    static = body.get("static")
    if isinstance(static, dict):
        static.pop("lockfile", None)


def _rubric(case: Any) -> None:
    name = case.path_parameters.get("name", "")
    text = os.environ["CONFORMANCE_RUBRIC"]
    case.body = re.sub(r'(?m)^name = ".*"$', f'name = "{name}"', text, count=1)


def _repo(case: Any) -> None:
    if isinstance(case.body, dict):
        case.body["path"] = os.environ["CONFORMANCE_REPO"]


_REPAIRS = {
    "POST /v1/grade": _grade,
    "POST /v1/runs": _run,
    "PUT /v1/tasks/{task}": _task,
    "PUT /v1/rubrics/{name}": _rubric,
    "PUT /v1/repos/{name}": _repo,
}
