"""Reading and checking what a request asks for: layers, a task, samples (no SQL, no pipeline).

Bodies are parsed off the event loop (:func:`~gradebox.service.api.bodies.off_loop`)
within a time budget; every problem is reported at once with a JSON pointer.
"""

from __future__ import annotations

from typing import Any

from gradebox.model import task_of
from gradebox.service.api.bodies import Budget, parse_json, parse_samples_body
from gradebox.service.config import JUDGE_MODES, Layers
from gradebox.service.engine.auth import Principal
from gradebox.service.engine.grading import GradingService
from gradebox.service.engine.rubricdata import loader_problem, rubric_name_ok
from gradebox.service.engine.state import ServiceState
from gradebox.service.engine.validate import CheckedTask, check_samples, check_task
from gradebox.service.problems import ApiError, Problem

__all__ = ["checked_task", "layers_of", "one_sample", "ready", "run_samples"]


def ready(state: ServiceState) -> GradingService:
    """The grading engine, or 503 while the sandbox has not passed its self-check."""
    grading = state.grading
    if grading is None:
        raise ApiError(503, "not ready", headers={"Retry-After": "5"})
    return grading


def layers_of(state: ServiceState, static: Any, judge: Any, where: str) -> Layers:
    """The layers a request asks for, its defaults filled in; 422 for what this server lacks."""
    problems = []
    if static is None:
        static = state.has_static
    elif not isinstance(static, bool):
        problems.append(Problem(f"{where}static", "must be true or false"))
    elif static and not state.has_static:
        problems.append(Problem(f"{where}static", "the static layers are off on this server"))
    if judge is None:
        judge = state.config.judge_default if state.has_judge else "off"
    elif judge not in JUDGE_MODES:
        problems.append(Problem(f"{where}judge", "must be one of " + ", ".join(JUDGE_MODES)))
    elif judge != "off" and not state.has_judge:
        problems.append(Problem(f"{where}judge", "no judge is configured on this server"))
    if problems:
        raise ApiError(422, "invalid layers", problems)
    return Layers(static=static is True, judge=judge)


def checked_task(state: ServiceState, task: str, raw: bytes) -> CheckedTask:
    """Parse and check a task body (in a worker thread); its rubric must load now."""
    c = state.config
    body = parse_json(raw, Budget(c.parse_budget_s))
    checked = check_task(task, body, max_cases=c.max_cases_per_task, server=c.limits)
    _rubric_loads(state, checked.public.get("rubric"))
    return checked


def _rubric_loads(state: ServiceState, name: object) -> None:
    """A task's rubric must be a built-in or stored one, and load now, not fail grades later."""
    if name is None:
        return
    if not isinstance(name, str) or not rubric_name_ok(name) or not state.rubrics.known(name):
        message = "no rubric of this name: a built-in one or one stored with PUT /v1/rubrics"
        raise ApiError(422, "invalid task", [Problem("/public/rubric", message)])
    if state.judge_stage is None:
        return
    from rubrics import RubricError  # noqa: PLC0415 - with the judge only

    try:
        state.judge_stage.judge.rubric(state.rubrics.path(name))
    except RubricError as exc:
        problems = [Problem("/public/rubric", loader_problem(p).message) for p in exc.problems]
        raise ApiError(422, "invalid task", problems) from exc


def one_sample(state: ServiceState, raw: bytes, who: Principal) -> tuple[dict[str, Any], Layers]:
    """Parse and check a grade body (in a worker thread): the sample and its layers."""
    body = parse_json(raw, Budget(state.config.parse_budget_s))
    layers = None
    if isinstance(body, dict):
        layers = layers_of(state, body.pop("static", None), body.pop("judge", None), "/")
    [sample] = check_samples([body], numbered=False)
    _known_tasks(state, [sample], who, numbered=False)
    _short_enough(state, [sample], numbered=False)
    assert layers is not None  # noqa: S101 - check_samples refused anything but an object
    return sample, layers


def run_samples(state: ServiceState, raw: bytes, who: Principal) -> list[dict[str, Any]]:
    """Parse and check a run body (in a worker thread), stopping one sample past the cap."""
    c = state.config
    budget = Budget(c.parse_budget_s)
    items = parse_samples_body(raw, max_items=c.max_samples_per_run, budget=budget)
    if not items:
        raise ApiError(422, "no samples", [Problem("", "must hold at least one sample")])
    samples = check_samples(items, numbered=True, tick=budget.tick)
    _known_tasks(state, samples, who, numbered=True)
    _short_enough(state, samples, numbered=True)
    return samples


def _short_enough(state: ServiceState, samples: list[dict[str, Any]], *, numbered: bool) -> None:
    most = state.config.max_code_chars
    problems = [
        Problem(f"/{i}/{key}" if numbered else f"/{key}", f"longer than {most} characters")
        for i, s in enumerate(samples)
        for key in ("reply", "code")
        if len(s.get(key) or "") > most
    ]
    if problems:
        raise ApiError(422, "sample too long", problems)


def _known_tasks(
    state: ServiceState, samples: list[dict[str, Any]], who: Principal, *, numbered: bool
) -> None:
    """422 for a task that is not registered or that this token may not use.

    Both answer the same, so a scoped token cannot tell which tasks exist.
    """
    found = state.store.task_names({task_of(s) for s in samples})
    known = {t: fn for t, fn in found.items() if who.may_use(t)}
    problems = []
    for i, s in enumerate(samples):
        where = f"/{i}/" if numbered else "/"
        task = task_of(s)
        if task not in known:
            field = "task" if "task" in s else "fn"
            problems.append(Problem(where + field, "no task of this name is registered"))
        elif "task" in s and "fn" in s and s["fn"] != known[task]:
            problems.append(Problem(where + "fn", "is not the entry point of this task"))
    if problems:
        raise ApiError(422, "unknown task", problems)
