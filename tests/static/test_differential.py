"""static.differential: fingerprints survive line moves; new, unchanged, fixed; filter modes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from static.differential import Located, classify, in_scope
from static.findings import Finding

BASE = "import os\n\nx = eval(a)\n"
HEAD = "import os\n\n\n# moved down\nx = eval(a)\ny = eval(b)\n"


def f(rule: str, line: int) -> Finding:
    return Finding("security", rule, "medium", line, 1, "use of eval")


def test_a_finding_that_moved_is_unchanged_and_a_new_one_is_new():
    tagged = classify(
        [Located("m.py", f("B307", 3))],
        [Located("m.py", f("B307", 5)), Located("m.py", f("B307", 6))],
        {"m.py": BASE},
        {"m.py": HEAD},
    )
    assert [(t.finding.line, t.state) for t in tagged] == [(5, "unchanged"), (6, "new")]


def test_identical_lines_are_told_apart_by_occurrence():
    base_text, head_text = "x = eval(a)\n", "x = eval(a)\nx = eval(a)\n"
    tagged = classify(
        [Located("m.py", f("B307", 1))],
        [Located("m.py", f("B307", 1)), Located("m.py", f("B307", 2))],
        {"m.py": base_text},
        {"m.py": head_text},
    )
    assert sorted(t.state for t in tagged) == ["new", "unchanged"]
    assert len({t.fingerprint for t in tagged}) == 2


def test_a_removed_finding_is_fixed_and_never_counts():
    tagged = classify([Located("m.py", f("B307", 3))], [], {"m.py": BASE}, {"m.py": "x = 1\n"})
    assert [t.state for t in tagged] == ["fixed"]
    assert not in_scope(tagged[0], "nofilter", {}, {})


def test_a_changed_line_makes_its_finding_new():
    tagged = classify(
        [Located("m.py", f("B307", 3))], [Located("m.py", f("B307", 3))],
        {"m.py": BASE}, {"m.py": "import os\n\nx = eval(b)\n"},
    )  # fmt: skip
    assert [t.state for t in tagged] == ["new", "fixed"]


def test_filter_modes():
    [new] = [
        t
        for t in classify([], [Located("m.py", f("B307", 6))], {}, {"m.py": HEAD})
        if t.state == "new"
    ]
    added, hunks = {"m.py": frozenset({5})}, {"m.py": frozenset({4, 5, 6})}
    assert not in_scope(new, "added", added, hunks)
    assert in_scope(new, "diff_context", added, hunks)
    assert in_scope(new, "file", added, hunks)
    assert not in_scope(new, "file", {"other.py": frozenset({1})}, {})
    assert in_scope(new, "nofilter", {}, {})


@given(st.lists(st.integers(min_value=1, max_value=5), max_size=8), st.integers(0, 10))
def test_inserting_blank_lines_above_changes_nothing(lines, shift):
    text = "".join(f"v{i} = eval(x)\n" for i in range(1, 6))
    moved = "\n" * shift + text
    base = [Located("m.py", f("B307", n)) for n in lines]
    head = [Located("m.py", f("B307", n + shift)) for n in lines]
    tagged = classify(base, head, {"m.py": text}, {"m.py": moved})
    assert {t.state for t in tagged} <= {"unchanged"}
