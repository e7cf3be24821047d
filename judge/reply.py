"""The reply protocol: the JSON schema the judge must answer with, and its checks.

The schema is built from the rubric (criterion ids as required properties,
scores as an ``enum`` of the rubric's scale), sent as a strict
``json_schema`` response format, and every reply is validated against that
same schema with ``jsonschema`` -- structured output is a request, not a
guarantee, and JSON-mode endpoints guarantee even less. Then the checks a
schema cannot express: issue lines inside the code, and a verdict consistent
with its unmet requirements.

Anything that fails is a :class:`Violation`, which the judge turns into
``needs_review`` with the raw reply kept. Never a pass, a fail or a score.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import jsonschema

from judge.types import IntentVerdict, Issue, ReasonCode, Reply, Severity
from rubrics import Rubric

__all__ = ["SCHEMA_NAME", "Judgement", "ReplyChecker", "Violation", "check_reply", "reply_schema"]

SCHEMA_NAME = "gradebox_judgement"
"""The ``json_schema.name`` sent with the response format."""
_MAX_SHOWN = 5

_ISSUE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["line", "severity", "message"],
    "properties": {
        "line": {
            "type": ["integer", "null"],
            "description": "1-based line of the candidate code; null for the whole function.",
        },
        "severity": {"type": "string", "enum": ["info", "warning", "error"]},
        "message": {"type": "string", "description": "One sentence."},
    },
}


@dataclass(frozen=True, slots=True)
class Judgement:
    """A reply that passed every check."""

    verdict: IntentVerdict | None
    """Intent verdict, when the rubric asks for one."""
    scores: dict[str, int]
    """Score per criterion id: every id of the rubric, each within its scale."""
    issues: tuple[Issue, ...]
    """Problems pointed at."""
    unmet_requirements: tuple[str, ...]
    """Unmet requirements (empty when the rubric asks for no verdict)."""
    rationale: str
    """Justification."""


@dataclass(frozen=True, slots=True)
class Violation:
    """Why a reply cannot be used."""

    code: ReasonCode
    """``parse_failure``, ``schema_violation``, ``rubric_violation``, ``refusal``,
    ``truncated`` or ``empty_reply``."""
    detail: str
    """What exactly was wrong."""


def reply_schema(rubric: Rubric) -> dict[str, Any]:
    """The JSON schema a reply must match for ``rubric`` (strict-mode compatible).

    Args:
        rubric: The rubric being scored.

    Returns:
        The schema: ``scores`` (one integer per criterion id, ``enum`` of the
        scale), ``issues`` (line, severity, message), ``rationale``, and for
        rubrics that ask for a verdict, ``verdict`` and ``unmet_requirements``.
    """
    ids = list(rubric.criterion_ids)
    score = {"type": "integer", "enum": list(rubric.scale.values)}
    props: dict[str, Any] = {}
    if rubric.verdict:
        props["verdict"] = {"type": "string", "enum": ["match", "mismatch"]}
        props["unmet_requirements"] = {"type": "array", "items": {"type": "string"}}
    props["scores"] = {
        "type": "object",
        "additionalProperties": False,
        "required": ids,
        "properties": {cid: score for cid in ids},
    }
    props["issues"] = {"type": "array", "items": _ISSUE}
    props["rationale"] = {"type": "string"}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(props),
        "properties": props,
    }


class ReplyChecker:
    """Checks replies for one rubric; the schema and its validator are built once."""

    def __init__(self, rubric: Rubric) -> None:
        """Build the reply schema and validator for ``rubric``."""
        self.rubric = rubric
        """The rubric replies are checked against."""
        self.schema = reply_schema(rubric)
        """The reply schema (sent as the strict response format)."""
        canonical = json.dumps(self.schema, sort_keys=True, separators=(",", ":"))
        self.schema_sha256 = hashlib.sha256(canonical.encode()).hexdigest()
        """SHA-256 of the canonical schema, for the cache key."""
        self._validator = jsonschema.Draft202012Validator(self.schema)

    def check(self, reply: Reply, line_count: int) -> Judgement | Violation:
        """Check one reply against the protocol.

        Args:
            reply: The exchange as received.
            line_count: Lines of candidate code the judge was shown.

        Returns:
            The judgement, or why it cannot be used.
        """
        early = _finish_problem(reply)
        if early is not None:
            return early
        data = _parse(cast(str, reply.content))
        if isinstance(data, Violation):
            return data
        problem = self._schema_problem(data) or _consistency_problem(data, line_count)
        return problem if problem is not None else _judgement(data)

    def _schema_problem(self, data: Any) -> Violation | None:
        errors = sorted(self._validator.iter_errors(data), key=lambda e: list(map(str, e.path)))
        if not errors:
            return _integer_problem(data)
        on_scores = [e for e in errors if list(e.absolute_path)[:1] == ["scores"]]
        if on_scores:
            details = [d for e in on_scores for d in _score_details(e, data, self.rubric)]
            return Violation("rubric_violation", _join(details))
        return Violation("schema_violation", _join(_describe(e) for e in errors))


def check_reply(reply: Reply, rubric: Rubric, line_count: int) -> Judgement | Violation:
    """Check one reply against the protocol (a one-off :class:`ReplyChecker`).

    Args:
        reply: The exchange as received.
        rubric: The rubric it was asked for.
        line_count: Lines of candidate code the judge was shown.

    Returns:
        The judgement, or why it cannot be used.
    """
    return ReplyChecker(rubric).check(reply, line_count)


def _finish_problem(reply: Reply) -> Violation | None:
    if reply.refusal:
        return Violation("refusal", f"the model refused: {reply.refusal}")
    if reply.finish_reason == "content_filter":
        return Violation("refusal", "the reply was withheld by a content filter")
    if reply.finish_reason == "length":
        return Violation("truncated", "the reply hit the token limit before it was complete")
    if reply.content is None or not reply.content.strip():
        return Violation("empty_reply", "the reply has no content")
    return None


def _parse(content: str) -> Any:
    try:
        return json.loads(content, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except ValueError as exc:
        return Violation("parse_failure", f"not a JSON document: {exc}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    duplicated = sorted({k for k in keys if keys.count(k) > 1})
    if duplicated:
        raise ValueError(f"duplicate keys {duplicated}")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _score_details(error: jsonschema.ValidationError, data: Any, rubric: Rubric) -> Iterator[str]:
    path = list(error.absolute_path)
    known = rubric.criterion_ids
    if len(path) == 2 and error.validator == "enum":
        yield (
            f"score for {path[1]} is {error.instance!r}, outside the rubric's scale "
            f"{rubric.scale.min}..{rubric.scale.max}"
        )
    elif error.validator == "additionalProperties":
        unknown = sorted(set(data["scores"]) - set(known))
        yield f"unknown criterion id(s) {unknown}; the rubric has {list(known)}"
    elif error.validator == "required":
        missing = [cid for cid in known if cid not in data["scores"]]
        yield f"no score for {missing}"
    else:
        yield _describe(error)


def _integer_problem(data: dict[str, Any]) -> Violation | None:
    # jsonschema accepts 3.0 as an "integer"; a score must be written as one.
    floats = sorted(cid for cid, v in data["scores"].items() if type(v) is not int)
    if floats:
        return Violation("rubric_violation", f"scores for {floats} are not written as integers")
    return None


def _consistency_problem(data: dict[str, Any], line_count: int) -> Violation | None:
    for n, issue in enumerate(data["issues"], start=1):
        line = issue["line"]
        if line is not None and (type(line) is not int or not 1 <= line <= line_count):
            return Violation(
                "rubric_violation",
                f"issue {n} points at line {line!r}; the code has lines 1..{line_count}",
            )
    verdict, unmet = data.get("verdict"), data.get("unmet_requirements", [])
    if verdict == "match" and unmet:
        return Violation("rubric_violation", "verdict is 'match' but unmet requirements are listed")
    if verdict == "mismatch" and not unmet:
        return Violation(
            "rubric_violation", "verdict is 'mismatch' but no unmet requirement is listed"
        )
    return None


def _judgement(data: dict[str, Any]) -> Judgement:
    return Judgement(
        verdict=data.get("verdict"),
        scores=dict(data["scores"]),
        issues=tuple(
            Issue(i["line"], cast(Severity, i["severity"]), i["message"]) for i in data["issues"]
        ),
        unmet_requirements=tuple(data.get("unmet_requirements", ())),
        rationale=data["rationale"],
    )


def _describe(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"at {where}: {error.message}"


def _join(details: Iterator[str] | list[str]) -> str:
    items = list(details)
    shown = "; ".join(items[:_MAX_SHOWN])
    return shown + (f"; and {len(items) - _MAX_SHOWN} more" if len(items) > _MAX_SHOWN else "")
