"""The OpenAPI document is the server: read as data, and fuzzed against a real ``serve``.

The first tests read the committed ``openapi.json``: every ``$ref`` resolves, every
request body is required, every error a route can send is declared in the service's
one error shape (401 where a token is needed, 403 where an admin's is, 422 as
``{"detail", "problems"}``), and what the server sends is that shape.

The last runs schemathesis (its CLI, every check) with the committed document
against ``python -m gradebox.service serve`` on a real port, bounded: 8
examples per operation and phase, deterministic generation (the same ~1,200 cases
every run; about a minute on a busy 2-core machine). It must find nothing.
Grading stays cheap: the server runs no static layers and no judge (the hooks
ask only for the layers it has), and generated code rarely parses, so most
grades end at the gate before a sandbox process is spent. The hooks
(``conformance_hooks.py``) repair positive cases for what JSON Schema cannot say
(a registered task, a git repository on the host, rubric TOML) and nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from ports import free_port

from gradebox.service.problems import ApiError, Problem

ROOT = Path(__file__).resolve().parents[4]
HERE = Path(__file__).resolve().parent
DOC = json.loads((ROOT / "openapi.json").read_text(encoding="utf-8"))
OPERATIONS = [
    (method.upper(), path, op) for path, ops in DOC["paths"].items() for method, op in ops.items()
]
ERROR_REF = "#/components/schemas/ErrorJson"
ADMIN_ONLY = {
    ("GET", "/metrics"),
    ("PUT", "/v1/tasks/{task}"),
    ("GET", "/v1/tasks/{task}"),
    ("PUT", "/v1/rubrics/{name}"),
    ("GET", "/v1/rubrics/{name}"),
    ("POST", "/v1/tokens"),
    ("GET", "/v1/tokens"),
    ("DELETE", "/v1/tokens/{token_id}"),
    ("PUT", "/v1/repos/{name}"),
    ("GET", "/v1/repos/{name}"),
}


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _resolve(ref: str) -> Any:
    assert ref.startswith("#/"), f"{ref}: not a pointer into the document"
    node: Any = DOC
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        assert isinstance(node, dict) and part in node, f"{ref} resolves nowhere"
        node = node[part]
    return node


def test_every_ref_resolves_in_the_document():
    refs = set(_refs(DOC))
    assert refs, "the document refers to nothing: the check would prove nothing"
    for ref in sorted(refs):
        _resolve(ref)


def test_every_request_body_is_declared_and_required():
    writes = [(m, p, op) for m, p, op in OPERATIONS if m in ("POST", "PUT")]
    assert len(writes) == 9
    for method, path, op in writes:  # every one reads a body (none is optional)
        assert op.get("requestBody", {}).get("required") is True, f"{method} {path}"
    reads = [(m, p) for m, p, op in OPERATIONS if m not in ("POST", "PUT") and "requestBody" in op]
    assert not reads


def test_every_error_is_declared_in_the_one_error_shape():
    for method, path, op in OPERATIONS:
        answers = op["responses"]
        secured = bool(op.get("security"))
        assert ("401" in answers) == secured, f"{method} {path}: 401 iff a token is needed"
        if secured:
            assert answers["401"]["headers"]["WWW-Authenticate"]["required"] is True
        admin = (method, path) in ADMIN_ONLY
        assert ("403" in answers) == admin, f"{method} {path}: 403 iff an admin token is needed"
        if "requestBody" in op:
            assert {"408", "413", "422"} <= set(answers), f"{method} {path}: body errors"
        for status, answer in answers.items():
            if status.startswith(("4", "5")) and (method, path) != ("GET", "/readyz"):
                schema = answer["content"]["application/json"]["schema"]
                assert schema == {"$ref": ERROR_REF}, f"{method} {path} {status}: {schema}"
    assert "HTTPValidationError" not in json.dumps(DOC)


def test_the_declared_error_shape_is_what_the_server_sends():
    schema = {**_resolve(ERROR_REF), "components": DOC["components"]}
    many = [Problem(f"/{i}", "wrong", line=i, column=1) for i in range(60)]
    for error in (
        ApiError(401, "unauthorized"),
        ApiError(422, "invalid", [Problem("judge", "must be one of wait, defer, off", "query")]),
        ApiError(422, "invalid", many),
    ):
        jsonschema.validate(error.to_json(), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"detail": [{"loc": ["query"], "msg": "x"}]}, schema)


def test_a_sample_needs_exactly_one_of_reply_or_code():
    body = DOC["paths"]["/v1/grade"]["post"]["requestBody"]["content"]["application/json"]
    validator = jsonschema.Draft202012Validator(body["schema"])
    assert validator.is_valid({"task": "t", "code": "x"})
    assert validator.is_valid({"fn": "t", "reply": "x"})
    assert not validator.is_valid({"task": "t"})
    assert not validator.is_valid({"task": "t", "reply": "x", "code": "x"})
    assert not validator.is_valid({"code": "x"})


# ------------------------------------------------------------ a real server


@dataclass(frozen=True)
class Served:
    url: str
    admin: str
    tmp: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("conformance")
    port = free_port()
    argv = [
        sys.executable, "-m", "gradebox.service", "serve", "--db", str(tmp / "g.sqlite"),
        "--port", str(port), "--admin-token", "--workers", "1", "--static-sessions", "0",
        "--no-judge", "--log-level", "warning",
    ]  # fmt: skip
    out = tmp / "serve.out"
    with out.open("wb") as stdout, (tmp / "serve.err").open("wb") as stderr:
        proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # a hang bound: start-up takes ~20 s at load 20
        while True:
            try:
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        [line] = [x for x in out.read_text().splitlines() if x.startswith("admin token")]
        admin = line.split(": ", 1)[1]
        task = {"hidden": [{"args": [2], "expect": True}]}
        r = httpx.put(f"{url}/v1/tasks/is_even", json=task, headers=_bearer(admin))
        assert r.status_code == 200, r.text
        yield Served(url, admin, tmp)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_options_and_405_allow_every_method_of_the_path(served):
    for method, path, allowed in [
        ("OPTIONS", "/v1/tasks/HumanEval/85", "GET, PUT"),
        ("PATCH", "/v1/runs/abc", "DELETE, GET"),
        ("OPTIONS", "/v1/tokens", "GET, POST"),
        ("OPTIONS", "/v1/rubrics/x", "GET, PUT"),
        ("OPTIONS", "/v1/repos/x", "GET, PUT"),
    ]:
        r = httpx.request(method, served.url + path, headers=_bearer(served.admin))
        assert r.status_code == 405
        assert r.headers["allow"] == allowed, (method, path)
        assert r.json() == {"detail": "Method Not Allowed"}


def test_a_bad_query_parameter_answers_in_the_problem_shape(served):
    r = httpx.post(
        f"{served.url}/v1/runs?judge=bogus", content=b"[]", headers=_bearer(served.admin)
    )
    assert r.status_code == 422
    body = r.json()
    assert body["detail"] == "invalid parameters"
    assert [(p["in"], p["pointer"]) for p in body["problems"]] == [("query", "judge")]


def test_a_selector_that_is_no_severity_is_a_422_not_a_500(served):
    """Found by schemathesis: ``min_severity: {}`` (unhashable) crashed the policy check."""
    policy = {"fail_on": [{"min_severity": {}}]}
    task = {"hidden": [{"args": [2], "expect": True}], "static": {"policy": policy}}
    r = httpx.put(f"{served.url}/v1/tasks/is_odd", json=task, headers=_bearer(served.admin))
    assert r.status_code == 422, r.text
    assert r.json()["problems"][0]["pointer"] == "/static/policy"


def test_schemathesis_finds_nothing_against_a_real_serve(served):
    repo = served.tmp / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    env = os.environ | {
        "SCHEMATHESIS_HOOKS": "conformance_hooks",
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "CONFORMANCE_TASK": "is_even",
        "CONFORMANCE_REPO": str(repo),
        "CONFORMANCE_RUBRIC": (ROOT / "rubrics" / "default.toml").read_text(encoding="utf-8"),
    }
    argv = [
        sys.executable, "-m", "schemathesis.cli", "run", str(ROOT / "openapi.json"),
        "--url", served.url, "--header", f"Authorization: Bearer {served.admin}",
        "--checks", "all", "--max-examples", "8",
        "--generation-deterministic",
        "--workers", "1",  # threads: CPython 3.11's ast.parse is not thread-safe in hypothesis
        "--no-color", "--output-truncate", "false",
    ]  # fmt: skip
    started = time.monotonic()
    run = subprocess.run(  # in tmp: schemathesis keeps a cache in its working directory
        argv, env=env, cwd=served.tmp, capture_output=True, text=True, timeout=900, check=False
    )
    took = time.monotonic() - started
    summary = run.stdout[run.stdout.rfind("=== FAILURES") :] if run.returncode else ""
    cases = [line.strip() for line in run.stdout.splitlines() if " generated" in line]
    print(f"schemathesis: exit {run.returncode} in {took:.0f} s; {cases}")
    assert run.returncode == 0, summary or run.stdout[-20000:] + run.stderr[-5000:]
    assert "Tested: 24" in run.stdout, run.stdout[-5000:]  # every operation was reached
