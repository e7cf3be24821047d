"""Load a rubric file: parse the TOML, validate it, resolve includes and prompts.

A rubric is found by name among the built-in ones (``rubrics/<name>.toml``) or
by path. Everything wrong with a file is reported at once, one line per
problem, as ``file: criterion: what is wrong``::

    rubrics/intent.toml: INT002: weight: -1 is less than or equal to the minimum of 0
    my.toml: scale: min (5) must be below max (5)

Checks, in order: the TOML parses; it validates against ``rubric.schema.json``
(shipped in this package); then what a schema cannot say -- ``min < max``,
labels inside the scale, unique criterion ids (across includes too), includes
that exist, share the scale and do not cycle, at least one criterion, and
prompt templates that exist and use only known placeholders.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import string
import tomllib
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jsonschema

from rubrics.errors import Problem, RubricError
from rubrics.model import (
    JSON_MODE_FIELDS,
    SYSTEM_FIELDS,
    USER_FIELDS,
    USER_REQUIRED,
    Criterion,
    Prompt,
    Rubric,
    Scale,
)

__all__ = ["BUILTIN_DIR", "builtin_names", "load"]

BUILTIN_DIR = Path(__file__).resolve().parent
"""Where the built-in rubrics, their prompts and the schema live."""
_SCHEMA_FILE = BUILTIN_DIR / "rubric.schema.json"
_DEFAULT_PROMPT = "judge"


def builtin_names() -> tuple[str, ...]:
    """Names of the rubrics shipped with gradebox, sorted."""
    return tuple(sorted(p.stem for p in BUILTIN_DIR.glob("*.toml")))


def load(name_or_path: str | os.PathLike[str]) -> Rubric:
    """Load and validate a rubric.

    Args:
        name_or_path: A built-in rubric's name (``"default"``, ``"intent"``,
            ``"quality"``) or the path of a ``.toml`` rubric file.

    Returns:
        The rubric, includes resolved.

    Raises:
        RubricError: The rubric is missing or invalid; every problem is listed.
    """
    return _load(_resolve(name_or_path), ())


def _resolve(name_or_path: str | os.PathLike[str]) -> Path:
    text = os.fspath(name_or_path)
    is_name = not isinstance(name_or_path, os.PathLike) and "/" not in text
    path = BUILTIN_DIR / f"{text}.toml" if is_name and not text.endswith(".toml") else Path(text)
    if not path.is_file():
        known = ", ".join(builtin_names())
        raise RubricError([Problem(text, "rubric", f"no such rubric file; built-in: {known}")])
    return path


def _load(path: Path, stack: tuple[Path, ...]) -> Rubric:
    data = _read_toml(path)
    _raise_if(_schema_problems(path, data))
    included = _load_includes(path, data, stack)
    criteria = tuple(c for r in included for c in r.criteria) + _own_criteria(data)
    scale = _scale(data["scale"])
    _raise_if(_semantic_problems(path, data, scale, criteria, included))
    prompt = _load_prompt(path, data.get("prompt", _DEFAULT_PROMPT))
    return _build(path, data, scale, criteria, prompt)


def _raise_if(problems: list[Problem]) -> None:
    if problems:
        raise RubricError(problems)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise RubricError([Problem(str(path), "rubric", f"invalid TOML: {exc}")]) from exc
    except OSError as exc:
        raise RubricError([Problem(str(path), "rubric", f"cannot read: {exc}")]) from exc


@cache
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(_SCHEMA_FILE.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _schema_problems(path: Path, data: dict[str, Any]) -> list[Problem]:
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    return [_problem_from(path, data, e) for e in errors]


def _problem_from(path: Path, data: dict[str, Any], error: jsonschema.ValidationError) -> Problem:
    where = list(error.absolute_path)
    if len(where) >= 2 and where[0] == "criteria" and isinstance(where[1], int):
        label = _criterion_label(data["criteria"][where[1]], where[1])
        inner = ".".join(str(p) for p in where[2:])
        return Problem(str(path), label, f"{inner}: {error.message}" if inner else error.message)
    if where:
        inner = ".".join(str(p) for p in where[1:])
        what = f"{inner}: {error.message}" if inner else error.message
        return Problem(str(path), str(where[0]), what)
    return Problem(str(path), "rubric", error.message)


def _criterion_label(item: Any, index: int) -> str:
    cid = item.get("id") if isinstance(item, dict) else None
    return cid if isinstance(cid, str) and cid else f"criteria[{index}]"


def _load_includes(path: Path, data: dict[str, Any], stack: tuple[Path, ...]) -> list[Rubric]:
    here = (*stack, path.resolve())
    found: list[Rubric] = []
    for name in data.get("include", []):
        target = (path.parent / f"{name}.toml").resolve()
        if target in here:
            chain = " -> ".join(p.stem for p in (*here, target))
            raise RubricError([Problem(str(path), "include", f"include cycle: {chain}")])
        if not target.is_file():
            raise RubricError([Problem(str(path), "include", f"{name!r}: no file {target}")])
        found.append(_load(target, here))
    return found


def _own_criteria(data: dict[str, Any]) -> tuple[Criterion, ...]:
    return tuple(_criterion(item, data["name"]) for item in data.get("criteria", []))


def _criterion(item: dict[str, Any], origin: str) -> Criterion:
    return Criterion(
        id=item["id"],
        name=item["name"],
        weight=float(item["weight"]),
        what=item["what"].strip(),
        why=item["why"].strip(),
        example=item["example"].strip("\n"),
        use_instead=item["use_instead"].strip("\n"),
        references=tuple(item.get("references", ())),
        origin=origin,
    )


def _scale(raw: dict[str, Any]) -> Scale:
    labels = {int(k): v for k, v in sorted(raw["labels"].items(), key=lambda kv: int(kv[0]))}
    return Scale(min=raw["min"], max=raw["max"], labels=MappingProxyType(labels))


def _semantic_problems(
    path: Path,
    data: dict[str, Any],
    scale: Scale,
    criteria: tuple[Criterion, ...],
    included: list[Rubric],
) -> list[Problem]:
    where = str(path)
    problems = [Problem(where, "scale", what) for what in _scale_problems(scale)]
    problems += [Problem(where, cid, what) for cid, what in _duplicate_ids(criteria)]
    problems += [
        Problem(where, "include", f"{r.name!r} scores {r.scale.min}..{r.scale.max}, not the same")
        for r in included
        if (r.scale.min, r.scale.max) != (scale.min, scale.max)
    ]
    if not criteria:
        problems.append(Problem(where, "criteria", "no criteria: add [[criteria]] or include"))
    return problems


def _scale_problems(scale: Scale) -> Iterator[str]:
    if scale.min >= scale.max:
        yield f"min ({scale.min}) must be below max ({scale.max})"
        return
    for score in scale.labels:
        if score not in scale.values:
            yield f"labels: {score} is outside {scale.min}..{scale.max}"


def _duplicate_ids(criteria: tuple[Criterion, ...]) -> Iterator[tuple[str, str]]:
    seen: dict[str, str] = {}
    for c in criteria:
        if c.id in seen:
            yield c.id, f"duplicate id (defined in {seen[c.id]!r} and {c.origin!r})"
        seen.setdefault(c.id, c.origin)


def _load_prompt(path: Path, name: str) -> Prompt:
    texts = {
        "system": _template(path, name, f"{name}.system.txt", SYSTEM_FIELDS, frozenset()),
        "user": _template(path, name, f"{name}.user.txt", USER_FIELDS, USER_REQUIRED),
        "verdict": _template(path, name, f"{name}.verdict.txt", frozenset(), frozenset()),
        "json_mode": _template(path, name, "json_mode.txt", JSON_MODE_FIELDS, JSON_MODE_FIELDS),
    }
    return Prompt(name=name, **texts)


def _template(
    path: Path, name: str, filename: str, allowed: frozenset[str], required: frozenset[str]
) -> str:
    """Read a prompt template from ``prompts/`` next to the rubric, else the built-in one."""
    local = path.parent / "prompts" / filename
    file = local if local.is_file() else BUILTIN_DIR / "prompts" / filename
    if not file.is_file():
        raise RubricError([Problem(str(path), "prompt", f"{name!r}: no template {filename}")])
    text = file.read_text(encoding="utf-8")
    tpl = string.Template(text)
    problems = [
        Problem(str(file), "prompt", what) for what in _placeholder_problems(tpl, allowed, required)
    ]
    _raise_if(problems)
    return text


def _placeholder_problems(
    tpl: string.Template, allowed: frozenset[str], required: frozenset[str]
) -> Iterator[str]:
    if not tpl.is_valid():
        yield "invalid placeholder (a lone `$`? write `$$` for a dollar sign)"
        return
    used = set(tpl.get_identifiers())
    for unknown in sorted(used - allowed):
        yield f"unknown placeholder ${unknown}; allowed: {', '.join(sorted(allowed))}"
    for missing in sorted(required - used):
        yield f"missing required placeholder ${missing}"


def _build(
    path: Path,
    data: dict[str, Any],
    scale: Scale,
    criteria: tuple[Criterion, ...],
    prompt: Prompt,
) -> Rubric:
    fields: dict[str, Any] = {
        "name": data["name"],
        "version": data["version"],
        "title": data["title"],
        "scale": scale,
        "criteria": criteria,
        "verdict": data.get("verdict", False),
        "prompt": prompt,
    }
    return Rubric(**fields, source=str(path), digest=_digest(fields))


def _digest(fields: Mapping[str, Any]) -> str:
    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, Mapping):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        return value

    canonical = json.dumps(plain(fields), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
