"""Request-body documentation for the OpenAPI schema (checked by :mod:`..engine.validate`).

The bodies are read and checked by hand (strict JSON, JSON pointers in errors,
size limits while reading), so FastAPI does not see them; these fragments put
the same JSON schemas the loaders use into the published OpenAPI document.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["GRADE_BODY", "RUN_BODY", "TASK_BODY"]


def _schema(package: str, name: str) -> dict[str, Any]:
    text = (resources.files(package) / "schemas" / name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    return schema


def _sample() -> dict[str, Any]:
    schema = _schema("gradebox", "samples.schema.json")
    schema["required"] = []
    schema["anyOf"] = [{"required": ["task"]}, {"required": ["fn"]}]
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
    selectors = {"type": "array", "items": {"type": "object"}}
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "This task's static settings (default: the server's policy and lockfile).",
        "properties": {
            "policy": {
                "type": "object",
                "properties": {"fail_on": selectors, "review_on": selectors},
                "description": "Replaces the server's static policy (static.policy selectors).",
            },
            "allow_rules": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Rule ids the task legitimately needs (B324 for an MD5 task): "
                "their findings stay on the row and never decide it.",
            },
            "lockfile": {
                "type": "object",
                "required": ["name", "content"],
                "properties": {
                    "name": {"enum": ["requirements.txt", "uv.lock", "poetry.lock", "pylock.toml"]},
                    "content": {"type": "string"},
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
    limit = {"type": "number", "exclusiveMinimum": 0}
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
            "limits": {
                "type": "object",
                "additionalProperties": False,
                "description": "Lower the server's limits for this task (never raise them).",
                "properties": {
                    "case_timeout_s": limit,
                    "candidate_timeout_s": limit,
                    "memory_mb": {"type": "integer", "minimum": 1},
                    "max_timeouts": {"type": "integer", "minimum": 0},
                },
            },
        },
    }


def _body(schemas: dict[str, dict[str, Any]]) -> dict[str, object]:
    return {
        "requestBody": {
            "required": True,
            "content": {media: {"schema": schema} for media, schema in schemas.items()},
        }
    }


TASK_BODY = _body({"application/json": _task()})
"""``PUT /v1/tasks/{task}``."""
GRADE_BODY = _body({"application/json": _grade()})
"""``POST /v1/grade``."""
RUN_BODY = _body(
    {
        "application/json": {"type": "array", "items": _sample(), "minItems": 1},
        "application/jsonl": {"type": "string", "description": "One sample a line (JSON Lines)."},
    }
)
"""``POST /v1/runs``."""
