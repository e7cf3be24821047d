"""Tests for static.diffsize: line counts, ratios, and the gratuitous-rewrite rule GBX201."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from static.diffsize import check

# A 20-line original: ten small functions.
ORIGINAL = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(10))


def test_no_original_measures_nothing() -> None:
    assert check("x = 1\n", None) == ({}, [])


def test_identical() -> None:
    metrics, findings = check(ORIGINAL, ORIGINAL)
    assert metrics == {
        "original_lines": 20,
        "lines": 20,
        "added": 0,
        "removed": 0,
        "changed": 0,
        "unchanged": 20,
        "first_changed_line": 0,
        "rewritten_ratio": 0.0,
        "normalized_changed_lines": 0,
        "normalized_ratio": 0.0,
    }
    assert findings == []


def test_one_line_fix_is_small() -> None:
    metrics, findings = check(ORIGINAL.replace("x + 3", "x - 3"), ORIGINAL)
    assert (metrics["changed"], metrics["added"], metrics["removed"]) == (1, 0, 0)
    assert metrics["rewritten_ratio"] == 0.05
    assert metrics["first_changed_line"] == 8
    assert findings == []


def test_added_removed_and_changed_are_told_apart() -> None:
    old = "a\nb\nc\nd\n"
    new = "a\nB\nc\nd\ne\nf\n"  # b changed, e and f added
    metrics, _ = check(new, old)
    assert (metrics["changed"], metrics["added"], metrics["removed"]) == (1, 2, 0)
    assert metrics["unchanged"] == 3
    assert metrics["rewritten_ratio"] == 0.5  # 1 - 3/6
    metrics, _ = check(old, new)
    assert (metrics["changed"], metrics["added"], metrics["removed"]) == (1, 0, 2)


def test_reformatting_the_whole_file_to_change_one_line_is_flagged() -> None:
    reindented = ORIGINAL.replace("    ", "  ").replace("x + 3", "x - 3")
    metrics, findings = check(reindented, ORIGINAL)
    assert metrics["rewritten_ratio"] == 0.5
    # exactly half is not "most": nothing yet
    assert findings == []
    requoted = reindented.replace("def f", "def  f")
    metrics, findings = check(requoted, ORIGINAL)
    assert metrics["rewritten_ratio"] == 1.0
    assert metrics["normalized_changed_lines"] == 1
    [finding] = findings
    assert (finding.layer, finding.rule, finding.severity, finding.line) == (
        "diff",
        "GBX201",
        "low",
        1,
    )
    assert finding.message.startswith("patch rewrites 100% of a 20-line file (20 lines)")


def test_line_ending_rewrite_counts_textually_but_not_as_code() -> None:
    metrics, findings = check(ORIGINAL.replace("\n", "\r\n"), ORIGINAL)
    assert metrics["rewritten_ratio"] == 1.0
    assert metrics["normalized_ratio"] == 0.0
    assert [f.rule for f in findings] == ["GBX201"]


def test_a_real_rewrite_is_not_gratuitous_but_still_a_rewrite() -> None:
    rewritten = "".join(f"def g{i}(y):\n    return y * {i} - 1\n" for i in range(10))
    metrics, findings = check(rewritten, ORIGINAL)
    assert metrics["rewritten_ratio"] == 1.0
    assert metrics["normalized_ratio"] > 0.2
    assert [f.rule for f in findings] == ["GBX202"]
    assert check(rewritten, ORIGINAL, max_rewrite=1.0)[1] == []


def test_rewriting_a_40_line_function_to_change_one_behaviour_is_flagged() -> None:
    body = "".join(f"    total = total + items[{i}] * {i}\n" for i in range(38))
    original = f"def score(items):\n    total = 0\n{body}"
    renamed = original.replace("total", "acc").replace("items", "xs") + "    return acc\n"
    metrics, findings = check(renamed, original)
    assert metrics["rewritten_ratio"] > 0.9
    assert [f.rule for f in findings] == ["GBX202"]
    assert findings[0].message.startswith("patch rewrites 100% of a 41-line file (41 lines)")


def test_small_files_are_not_flagged() -> None:
    old = "def f(x):\n    return x + 1\n"
    metrics, findings = check("def f(x):\n  return x+1\n", old)
    assert metrics["rewritten_ratio"] == 0.5
    metrics, findings = check("def f( x ):\n  return (x+1)\n", old)
    assert metrics["rewritten_ratio"] == 1.0
    assert findings == []


def test_unparseable_side_has_no_normalized_measure_and_no_finding() -> None:
    broken = ORIGINAL.replace("    ", "  ").replace("def f0(x):", "def f0(x:")
    metrics, findings = check(broken, ORIGINAL)
    assert metrics["normalized_ratio"] is None
    assert metrics["normalized_changed_lines"] is None
    assert metrics["rewritten_ratio"] == 0.55  # a rewrite, but its real size is unknown
    assert findings == []


def test_thresholds_are_configurable() -> None:
    reindented = ORIGINAL.replace("    ", "  ")
    _, findings = check(reindented, ORIGINAL, max_rewritten=0.4)
    assert [f.rule for f in findings] == ["GBX201"]
    _, findings = check(reindented, ORIGINAL, min_lines=21, max_rewritten=0.4)
    assert findings == []


lines = st.lists(st.sampled_from(["a", "b", "c", "x = 1", "", "pass"]), max_size=30)


@given(lines, lines)
def test_counts_add_up(old_lines: list[str], new_lines: list[str]) -> None:
    old = "".join(f"{line}\n" for line in old_lines)
    new = "".join(f"{line}\n" for line in new_lines)
    m, _ = check(new, old)
    assert m["unchanged"] + m["changed"] + m["removed"] == len(old_lines)
    assert m["unchanged"] + m["changed"] + m["added"] == len(new_lines)
    assert 0.0 <= m["rewritten_ratio"] <= 1.0
    assert (m["rewritten_ratio"] == 0.0) == (old == new or not (old_lines or new_lines))
