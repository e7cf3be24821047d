"""Parsing a body strictly: lone surrogates never get in, whichever way they are written;
a body's parse is charged the CPU it takes, not the time it waits.

The surrogate check runs only when the text holds a ``u`` escape; these are the
ways a lone surrogate can be written, and the ways a valid text resembles one.
"""

from __future__ import annotations

import json
import time

import pytest

from gradebox.service.api.bodies import Budget, parse_json, parse_samples_body
from gradebox.service.problems import ApiError

REFUSED = {
    "lone high": (rb'{"code": "\ud800"}', "lone surrogate"),
    "lone low": (rb'{"code": "x\udfff"}', "lone surrogate"),
    "reversed pair": (rb'{"code": "\ude00\ud83d"}', "lone surrogate"),
    "upper-case escape": (rb'{"code": "\uD800"}', "lone surrogate"),
    "in a key": (rb'{"\ud800": 1}', "lone surrogate"),
    "raw bytes": (b'{"code": "\xed\xa0\x80"}', "invalid UTF-8"),
}
ACCEPTED = {
    "pair": (rb'{"code": "\ud83d\ude00"}', {"code": "\U0001f600"}),
    "escaped backslash": (rb'{"code": "\\ud800"}', {"code": "\\ud800"}),
    "non-ascii as is": ('{"code": "é😀"}'.encode(), {"code": "é😀"}),
    "plain": (b'{"code": "x"}', {"code": "x"}),
}


@pytest.mark.parametrize("name", REFUSED)
def test_a_lone_surrogate_is_refused(name):
    raw, words = REFUSED[name]
    with pytest.raises(ApiError) as caught:
        parse_json(raw)
    assert caught.value.status == 422
    assert words in caught.value.problems[0].message


@pytest.mark.parametrize("name", ACCEPTED)
def test_text_that_resembles_one_is_accepted(name):
    raw, value = ACCEPTED[name]
    assert parse_json(raw) == value


# ---------------------------------------------------------------- the parse budget


def _costly_body(samples: int) -> bytes:
    return json.dumps([{"fn": "f", "code": f"def f():\n    return {i}\n"} for i in range(samples)])


def test_a_body_that_costs_more_cpu_than_its_budget_is_413():
    raw = _costly_body(20_000).encode()
    budget = Budget(0.02)
    with pytest.raises(ApiError) as caught:
        parse_samples_body(raw, max_items=100_000, budget=budget)
    assert caught.value.status == 413
    assert "CPU" in caught.value.detail
    parse_samples_body(raw, max_items=100_000, budget=Budget(60.0))  # the same body, in time


def test_a_parse_that_waits_is_not_charged_for_the_wait():
    # A stalled host or another thread holding the GIL: wall time passes, this thread's
    # CPU does not. The old wall-clock budget refused this body (413) on a busy machine.
    budget = Budget(0.2)
    until = time.monotonic() + 0.4  # the stall: twice the budget, under the backstop
    while time.monotonic() < until:
        time.sleep(0.02)
    budget.tick()
    assert parse_samples_body(_costly_body(10).encode(), max_items=100, budget=budget)


def test_a_parse_starved_past_the_wall_backstop_is_413():
    budget = Budget(0.05)
    until = time.monotonic() + 0.05 * Budget.WALL_FACTOR + 0.05
    while time.monotonic() < until:
        time.sleep(0.02)
    with pytest.raises(ApiError) as caught:
        budget.tick()
    assert caught.value.status == 413
