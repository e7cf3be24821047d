"""What to gate, from the command line, a ``gates.jsonl`` file or SWE-bench's own files.

Every loader checks everything first and raises one :class:`~gradebox.errors.BadInput`
listing each problem as ``file:line: what is wrong``: nothing is gated until
the input is good.

``gates.jsonl``, one patch a line::

    {"id": "fix-mean", "repo": "calc", "base": "main", "patch": "@fix.diff",
     "intent": "mean() divides by n+1", "tests": {"fail_to_pass": ["tests/test_ops.py::test_mean"],
     "pass_to_pass": "auto"}, "test_patch": "@hidden.diff", "lockfile": "requirements.txt",
     "protect": ["tests/**"]}

``repo`` is relative to the file; ``patch`` and ``test_patch`` are diff text,
or ``@path`` (relative to the file); ``head`` (a revision) may stand in for
``patch``. SWE-bench: ``instances.jsonl`` (``instance_id``, ``repo``,
``base_commit``, ``test_patch``, ``FAIL_TO_PASS``, ``PASS_TO_PASS`` as lists or
JSON-encoded lists, ``problem_statement``), predictions as JSON Lines or a
JSON list or object (``instance_id``, ``model_patch``), and ``DIR/<owner>__<name>``
a local clone of each instance's ``repo``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from gradebox.errors import BadInput
from gradebox.patches.model import GateSpec, TestIds

__all__ = ["load_gates", "load_swebench", "parse_ids", "read_text_arg"]

_GATE_KEYS = {"id", "repo", "base", "patch", "head", "intent", "tests", "test_patch", "lockfile",
              "protect"}  # fmt: skip
_MAX_BYTES = 64 * 1024 * 1024


def read_text_arg(value: str | None, base_dir: Path, what: str) -> str | None:
    """``@path`` -> the file's text (relative to ``base_dir``); anything else as given."""
    if value is None or not value.startswith("@"):
        return value
    path = base_dir / value[1:]
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise BadInput([f"{what}: cannot read {path}: {exc}"]) from exc


def parse_ids(value: str | None, base_dir: Path, what: str) -> tuple[str, ...]:
    """Comma-separated pytest node ids, or ``@file`` with one per line (``#`` comments)."""
    if not value:
        return ()
    if value.startswith("@"):
        text = read_text_arg(value, base_dir, what) or ""
        items = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    else:
        items = [v.strip() for v in value.split(",")]
    ids = tuple(dict.fromkeys(i for i in items if i))
    bad = [i for i in ids if "\0" in i or i.startswith("-")]
    if bad:
        raise BadInput([f"{what}: {bad[0]!r} is not a pytest node id"])
    return ids


def _lines(path: Path) -> Iterator[tuple[int, Any | str]]:
    """``(line number, decoded object or the error)`` for each non-blank line."""
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise BadInput([f"{path}: larger than {_MAX_BYTES} bytes"])
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise BadInput([f"{path}: cannot read: {exc}"]) from exc
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as exc:
            yield n, f"not JSON ({exc.msg} at column {exc.colno})"


def _str(obj: Mapping[str, Any], key: str, where: str, problems: list[str]) -> str | None:
    value = obj.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        problems.append(f"{where}: {key} must be a non-empty string")
        return None
    return value


def _id_list(value: Any, where: str, key: str, problems: list[str]) -> tuple[str, ...] | None:
    if isinstance(value, str):  # SWE-bench stores these as JSON text
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            problems.append(f"{where}: {key} is a string that is not a JSON list")
            return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        problems.append(f"{where}: {key} must be a list of test ids")
        return None
    return tuple(dict.fromkeys(value))


def load_gates(path: Path) -> list[GateSpec]:
    """Read ``gates.jsonl``; see the module docstring.

    Raises:
        BadInput: Any line is wrong (all of them are listed).
    """
    problems: list[str] = []
    specs: list[GateSpec] = []
    seen: set[str] = set()
    for n, obj in _lines(path):
        where = f"{path}:{n}"
        if isinstance(obj, str) or not isinstance(obj, dict):
            problems.append(f"{where}: {obj if isinstance(obj, str) else 'not a JSON object'}")
            continue
        spec = _gate(obj, where, path.parent, problems)
        if spec is not None:
            if spec.id in seen:
                problems.append(f"{where}: id {spec.id!r} appears twice")
            seen.add(spec.id)
            specs.append(spec)
    if problems:
        raise BadInput(problems)
    if not specs:
        raise BadInput([f"{path}: no gates"])
    return specs


def _gate(obj: dict[str, Any], where: str, here: Path, problems: list[str]) -> GateSpec | None:
    before = len(problems)
    unknown = sorted(set(obj) - _GATE_KEYS)
    if unknown:
        problems.append(f"{where}: unknown keys {unknown}; known: {sorted(_GATE_KEYS)}")
    gid, repo, base = (_str(obj, k, where, problems) for k in ("id", "repo", "base"))
    for key, value in (("id", gid), ("repo", repo), ("base", base)):
        if value is None and key not in obj:
            problems.append(f"{where}: {key} is required")
    patch, head = _str(obj, "patch", where, problems), _str(obj, "head", where, problems)
    if (patch is None) == (head is None) and "patch" not in obj:
        problems.append(f"{where}: give exactly one of patch and head")
    if "patch" in obj and not isinstance(obj["patch"], str):
        problems.append(f"{where}: patch must be a string (diff text or @file)")
    tests = _tests(obj.get("tests"), where, problems)
    protect = obj.get("protect")
    if protect is not None and (
        not isinstance(protect, list) or not all(isinstance(p, str) for p in protect)
    ):
        problems.append(f"{where}: protect must be a list of globs")
    if len(problems) > before or gid is None or repo is None or base is None or tests is None:
        return None
    try:
        patch_text = read_text_arg(obj.get("patch"), here, f"{where}: patch")
        test_patch = read_text_arg(_str(obj, "test_patch", where, problems), here, where)
        intent = read_text_arg(_str(obj, "intent", where, problems), here, where)
    except BadInput as exc:
        problems += exc.problems
        return None
    return GateSpec(
        id=gid, repo=(here / repo), base=base, patch=patch_text, tests=tests, head=head,
        intent=intent, test_patch=test_patch, lockfile=_str(obj, "lockfile", where, problems),
        protect=None if protect is None else tuple(protect), where=where,
    )  # fmt: skip


def _tests(value: Any, where: str, problems: list[str]) -> TestIds | None:
    if not isinstance(value, dict) or set(value) - {"fail_to_pass", "pass_to_pass"}:
        problems.append(f"{where}: tests must be {{fail_to_pass: [...], pass_to_pass: [...]|auto}}")
        return None
    f2p = _id_list(value.get("fail_to_pass", []), where, "tests.fail_to_pass", problems)
    raw = value.get("pass_to_pass", "auto")
    if raw == "auto":
        return None if f2p is None else TestIds(f2p, "auto")
    p2p = _id_list(raw, where, "tests.pass_to_pass", problems)
    if f2p is None or p2p is None:
        return None
    return TestIds(f2p, p2p)


def load_swebench(instances: Path, predictions: Path, repos: Path) -> list[GateSpec]:
    """Read SWE-bench instances and predictions into gates, in the predictions' order.

    Raises:
        BadInput: A bad line, a prediction for an unknown instance, or a missing clone.
    """
    problems: list[str] = []
    known: dict[str, tuple[dict[str, Any], str]] = {}
    for n, obj in _lines(instances):
        where = f"{instances}:{n}"
        if not isinstance(obj, dict):
            problems.append(f"{where}: {obj if isinstance(obj, str) else 'not a JSON object'}")
            continue
        missing = [k for k in ("instance_id", "repo", "base_commit") if not obj.get(k)]
        if missing:
            problems.append(f"{where}: missing {', '.join(missing)}")
            continue
        known[str(obj["instance_id"])] = (obj, where)
    preds = _predictions(predictions, problems)
    specs = [s for p, w in preds if (s := _swe_spec(p, w, known, repos, problems)) is not None]
    if problems:
        raise BadInput(problems)
    if not specs:
        raise BadInput([f"{predictions}: no predictions"])
    return specs


def _predictions(path: Path, problems: list[str]) -> list[tuple[dict[str, Any], str]]:
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeError, json.JSONDecodeError) as exc:
            raise BadInput([f"{path}: cannot read predictions: {exc}"]) from exc
        items = list(data.values()) if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise BadInput([f"{path}: predictions must be a list or an object"])
        return [(p, f"{path}:[{i}]") for i, p in enumerate(items)]
    out = []
    for n, obj in _lines(path):
        if isinstance(obj, str):
            problems.append(f"{path}:{n}: {obj}")
        else:
            out.append((obj, f"{path}:{n}"))
    return out


def _swe_spec(
    pred: Any,
    where: str,
    known: dict[str, tuple[dict[str, Any], str]],
    repos: Path,
    problems: list[str],
) -> GateSpec | None:
    if not isinstance(pred, dict) or not isinstance(pred.get("instance_id"), str):
        problems.append(f"{where}: a prediction needs an instance_id")
        return None
    iid = pred["instance_id"]
    if iid not in known:
        problems.append(f"{where}: no instance {iid!r} in the instances file")
        return None
    inst, iwhere = known[iid]
    patch = pred.get("model_patch")
    if patch is not None and not isinstance(patch, str):
        problems.append(f"{where}: model_patch must be a string or null")
        return None
    clone = repos / str(inst["repo"]).replace("/", "__")
    if not (clone / ".git").exists():
        problems.append(f"{iwhere}: no git clone of {inst['repo']} at {clone}")
        return None
    f2p = _id_list(inst.get("FAIL_TO_PASS", []), iwhere, "FAIL_TO_PASS", problems)
    p2p = _id_list(inst.get("PASS_TO_PASS", []), iwhere, "PASS_TO_PASS", problems)
    if f2p is None or p2p is None:
        return None
    return GateSpec(
        id=iid, repo=clone, base=str(inst["base_commit"]), patch=patch or "",
        tests=TestIds(f2p, p2p), intent=inst.get("problem_statement") or None,
        test_patch=inst.get("test_patch") or None, where=iwhere,
    )  # fmt: skip
