"""A grade body's schema check: ``jsonschema_rs`` may only say yes; ``jsonschema`` decides.

The compiled check skips the slow walk for a valid sample. Every verdict and every
message must be the ones ``jsonschema`` alone gives, on samples where the two
libraries differ too (Python's ``$`` matches before a final newline, Rust's does not).
"""

from __future__ import annotations

import pytest

from gradebox.service.engine import validate
from gradebox.service.problems import ApiError

VALID = [
    {"fn": "is_even", "code": "def is_even(n): ..."},
    {"task": "HumanEval/85", "reply": "```python\nx = 1\n```", "claim": "O(1)"},
    {"id": "a", "fn": "f", "code": "x", "meta": {"deep": [[[{"k": 1}]]]}, "model": "m"},
    {"fn": "is_even\n", "code": "x"},  # Python's pattern accepts it, Rust's does not
    {"fn": "f", "code": "x", "meta": {"n": 10**400}},  # beyond a 64-bit int
]
INVALID = [
    {"fn": "is even", "code": "x"},
    {"fn": "f", "code": 1},
    {"fn": "f", "code": "x", "extra": True},
    {"code": "x"},
    {"fn": "f"},
    {"fn": "f", "code": "x", "reply": "y"},
    {"fn": "f", "code": "x", "id": ""},
    {"fn": "f", "code": "x", "claim": "O(" + "n" * 200 + ")"},
    {"fn": "f", "code": "x", "meta": []},
    [1, 2],
    "text",
    None,
]
ITEMS = VALID + INVALID


def _verdict(item: object) -> object:
    try:
        return validate.check_samples([item], numbered=False)
    except ApiError as exc:
        return exc.status, exc.to_json()


@pytest.mark.parametrize("item", ITEMS, ids=[repr(i)[:40] for i in ITEMS])
def test_the_fast_check_never_changes_a_verdict(item, monkeypatch):
    fast = _verdict(item)
    assert isinstance(fast, list) == (item in VALID)
    monkeypatch.setattr(validate, "_SAMPLE_FAST", lambda _obj: False)  # jsonschema alone
    assert fast == _verdict(item)


def test_a_valid_sample_never_reaches_jsonschema(monkeypatch):
    class Refusing:
        def iter_errors(self, _obj):
            raise AssertionError("the slow walk ran for a valid sample")

    monkeypatch.setattr(validate, "_SAMPLE", Refusing())
    [sample] = validate.check_samples([ITEMS[0]], numbered=False)
    assert sample["id"] == "sample"
