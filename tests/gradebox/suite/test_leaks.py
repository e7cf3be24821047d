"""Prompt-leak detection: public examples and spec text."""

from __future__ import annotations

from gradebox.suite.leaks import find_leaks
from sandbox.types import PublicTask, make_case


def _task(spec="", examples=()):
    return PublicTask(fn="f", spec=spec, examples=tuple(examples))


def test_example_match_is_type_strict_and_includes_errors():
    cases = [
        make_case("f", 2, expect=True),
        make_case("f", 2, expect=1),  # same args, different type of result: no leak
        make_case("f", "x", error="builtins.TypeError"),
        make_case("f", (1, 2), expect=3),
    ]
    public = _task(
        examples=[
            {"args": [2], "expect": True},
            {"args": ["x"], "error": "TypeError"},
            {"args": [[1, 2]], "expect": 3},  # a list, not the tuple of the case
        ]
    )
    leaks = find_leaks("f", cases, public)
    assert [(k.case, k.where, k.example) for k in leaks] == [(0, "example", 0), (2, "example", 1)]


def test_spec_text_needs_the_call_and_its_result_together():
    spec = "f(0) == 0 and f(1) == 1; also f( 'a,b' ) returns ('a', 'b'). f(3) raises ValueError."
    cases = [
        make_case("f", 0, expect=0),
        make_case("f", 1, expect=10),  # f(1) is written, but with another result
        make_case("f", "a,b", expect=("a", "b")),
        make_case("f", 3, error="builtins.ValueError"),
        make_case("f", 2, expect=0),  # never written
    ]
    leaks = find_leaks("f", cases, _task(spec=spec))
    assert [(k.case, k.where) for k in leaks] == [(0, "spec"), (2, "spec"), (3, "spec")]


def test_no_public_no_leak():
    assert find_leaks("f", [make_case("f", 1, expect=1)], None) == []


def test_a_pathological_spec_is_searched_quickly():
    import time

    # CPU time of this thread, not a wall time: other processes on a busy machine do not
    # count. A backtracking search takes far more than a second here however often it is
    # tried; a linear one takes ~10 ms, so up to three tries absorb a cache-cold outlier.
    spec = "f(0)" + " =" * 20_000 + " 1" + "f(0) is" * 5_000
    spent = []
    for _ in range(3):
        start = time.thread_time()
        assert find_leaks("f", [make_case("f", 0, expect=0)], _task(spec=spec)) == []
        spent.append(time.thread_time() - start)
        if spent[-1] < 1.0:
            return
    raise AssertionError(f"the search took {min(spent):.2f} s of CPU ({spent})")
