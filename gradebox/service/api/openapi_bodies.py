"""Request-body documentation for the OpenAPI schema (checked by :mod:`..engine.validate`).

The bodies are read and checked by hand (strict JSON, JSON pointers in errors,
size limits while reading), so FastAPI does not see them; these fragments put
the same JSON schemas the loaders use into the published OpenAPI document.
A loader schema's own ``$defs`` are written in place where they are used: a
``#/$defs/...`` pointer inside the OpenAPI document would name the document's
root, where nothing is. Routers whose bodies are checked by a few lines of their
own (tokens, feedback, repositories, gates) declare their schema next to those
lines with :func:`json_body`.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, get_args

from sandbox.types import Limits
from static.findings import Layer, Severity

__all__ = ["GRADE_BODY", "RUN_BODY", "TASK_BODY", "TASK_ID", "json_body"]

TASK_ID = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "pattern": "^[^\\x00-\\x1f\\x7f]*$",
    "description": "A task id: 1 to 200 characters, no control character (HumanEval/85).",
}
"""What a task id is (:func:`gradebox.model.task_id_problem`)."""


def _schema(package: str, name: str) -> dict[str, Any]:
    text = (resources.files(package) / "schemas" / name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    defs = schema.pop("$defs", {})
    inlined: dict[str, Any] = _inline(schema, defs)
    return inlined


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with every ``{"$ref": "#/$defs/NAME"}`` replaced by that definition."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _inline(defs[ref.removeprefix("#/$defs/")], defs)
    return {key: _inline(value, defs) for key, value in node.items()}


def _sample() -> dict[str, Any]:
    schema = _schema("gradebox", "samples.schema.json")
    schema["required"] = []
    schema["allOf"] = [
        {"anyOf": [{"required": ["task"]}, {"required": ["fn"]}]},
        {"oneOf": [{"required": ["reply"]}, {"required": ["code"]}]},
    ]
    schema["properties"]["task"] = TASK_ID | schema["properties"]["task"]
    schema["description"] = (
        "A samples.jsonl line; exactly one of reply or code. id is optional. The task is "
        "named by its id (task), or by fn (a task whose id is its entry point)."
    )
    return schema


def _grade() -> dict[str, Any]:
    schema = _sample()
    schema["properties"] = schema["properties"] | {
        "static": {
            "type": "boolean",
            "description": "Run the static layers (default: true when the server runs them).",
        },
        "judge": {
            "enum": ["wait", "defer", "off"],
            "description": "Judge before answering, answer first with judge.status pending "
            "(then GET /v1/grades/{grade_id}), or not at all (default: serve --judge-default, "
            "itself off).",
        },
    }
    schema["description"] = "A sample, and the layers to grade it with."
    return schema


def _static() -> dict[str, object]:
    rules = {"type": "array", "items": {"type": "string", "minLength": 1}}
    selector = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "layer": {"enum": list(get_args(Layer))},
            "rules": rules | {"default": ["*"]},
            "min_severity": {"enum": list(get_args(Severity)), "default": "info"},
            "except_rules": rules,
        },
    }
    selectors = {"type": ["array", "null"], "items": selector}
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "This task's static settings (default: the server's policy and lockfile).",
        "properties": {
            "policy": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"fail_on": selectors, "review_on": selectors},
                "description": "Replaces the server's static policy (static.policy selectors).",
            },
            "allow_rules": {
                "type": "array",
                "items": {"type": "string", "pattern": "^[A-Za-z0-9*?_\\-]{1,40}$"},
                "description": "Rule ids the task legitimately needs (B324 for an MD5 task): "
                "their findings stay on the row and never decide it.",
            },
            "lockfile": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "content"],
                "properties": {
                    "name": {"enum": ["requirements.txt", "uv.lock", "poetry.lock", "pylock.toml"]},
                    "content": {"type": "string", "maxLength": 1024 * 1024},
                },
                "description": "The lockfile imports are checked against (no -r / -c includes).",
            },
        },
    }


def _task() -> dict[str, object]:
    hidden = _schema("sandbox", "hidden.schema.json")
    hidden["required"] = ["args"]
    public = _schema("sandbox", "public.schema.json")
    public["required"] = []
    del public["properties"]["static"]  # a task body's static settings are its own /static
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["hidden"],
        "properties": {
            "public": public
            | {
                "description": "A public.jsonl line. fn is the entry point; it defaults to the "
                "task id in the path when that is a Python name (and is required otherwise)."
            },
            "hidden": {
                "type": "array",
                "minItems": 1,
                "items": hidden,
                "description": "hidden.jsonl lines (fn defaults to public.fn). Write-only.",
            },
            "disclosure": {
                "enum": ["cases", "counts", "verdict"],
                "default": "counts",
                "description": "What grader tokens see of the hidden cases: per-case outcomes "
                "(cases), how many passed, failed and timed out (counts), or the verdict only.",
            },
            "static": _static(),
            "limits": _limits(),
        },
    }


def _limits() -> dict[str, object]:
    ceiling = Limits()  # the server's defaults (serve --case-timeout ...): a task only lowers them

    def limit(name: str, kind: str, least: dict[str, int]) -> dict[str, object]:
        most = getattr(ceiling, name)
        return {"type": kind, **least, "maximum": most, "description": f"At most the server's "
                f"own (default {most:g})."}  # fmt: skip

    return {
        "type": "object",
        "additionalProperties": False,
        "description": "Lower the server's limits for this task (never raise them).",
        "properties": {
            "case_timeout_s": limit("case_timeout_s", "number", {"exclusiveMinimum": 0}),
            "candidate_timeout_s": limit("candidate_timeout_s", "number", {"exclusiveMinimum": 0}),
            "memory_mb": limit("memory_mb", "integer", {"minimum": 1}),
            "max_timeouts": limit("max_timeouts", "integer", {"minimum": 0}),
        },
    }


def _body(schemas: dict[str, dict[str, Any]]) -> dict[str, object]:
    return {
        "requestBody": {
            "required": True,
            "content": {media: {"schema": schema} for media, schema in schemas.items()},
        }
    }


def json_body(schema: dict[str, Any]) -> dict[str, object]:
    """A route's ``openapi_extra``: a required JSON body of this schema."""
    return _body({"application/json": schema})


TASK_BODY = json_body(_task())
"""``PUT /v1/tasks/{task}``."""
GRADE_BODY = json_body(_grade())
"""``POST /v1/grade``."""
RUN_BODY = _body(
    {
        "application/json": {"type": "array", "items": _sample(), "minItems": 1},
        "application/jsonl": {"type": "string", "description": "One sample a line (JSON Lines)."},
    }
)
"""``POST /v1/runs``."""
