"""Reference-derived time limits, measured in the real sandbox."""

from __future__ import annotations

import json

from gradebox.model import Task
from gradebox.suite import derive_limits, plan_limits
from gradebox.suite.references import Reference
from sandbox.types import Limits, make_case

SLOW = (
    "import time\n\n"
    "def work(n):\n"
    "    if n == 1:\n"
    "        time.sleep(0.12)\n"
    "    if n == 2:\n"
    "        time.sleep(5)\n"
    "    return n\n"
)


def _tasks():
    work = Task("work", tuple(make_case("work", n, expect=n) for n in (0, 1, 2)))
    other = Task(
        "other", (make_case("other", 1, expect=1), make_case("other", 2, expect=2, timeout_s=1.5))
    )
    return {"work": work, "other": other}


def test_limits_scale_with_the_reference_and_fall_back_to_the_default(sandbox):
    tasks = _tasks()
    refs = {"work": Reference("work", SLOW)}
    plan = plan_limits(
        tasks, refs, sandbox, floor_s=0.5, factor=10.0, default=Limits(case_timeout_s=0.4)
    )
    fast, slow, hung = plan.limits["work"]
    assert fast == 0.5  # the floor
    assert 1.2 <= slow < 5.0  # 10 x ~0.12 s
    assert hung == 0.4  # never finished: the default
    assert plan.measured_s["work"][2] is None
    assert plan.limits["other"] == [0.4, 1.5]  # no reference: the case's own, else the default
    assert plan.sources == {"work": "reference", "other": "default"}
    record = json.loads(json.dumps(plan.to_json()))
    assert record["tasks"]["work"]["source"] == "reference"
    assert record["floor_s"] == 0.5 and record["factor"] == 10.0 and record["repeats"] == 3
    assert record["machine"]["sandbox"] == sandbox.backend


def test_apply_returns_new_tasks_with_timeout_s(sandbox):
    tasks = {"other": _tasks()["other"]}
    refs = {"other": Reference("other", "def other(x):\n    return x\n")}
    limits = derive_limits(tasks, refs, sandbox, floor_s=0.25, factor=10.0)
    assert limits == {"other": [0.25, 0.25]}
    plan = plan_limits(tasks, refs, sandbox, floor_s=0.25)
    applied = plan.apply(tasks)
    assert [c.timeout_s for c in applied["other"].cases] == [0.25, 0.25]
    assert tasks["other"].cases[1].timeout_s == 1.5  # the input is untouched
