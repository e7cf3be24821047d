"""Untrusted text in the comment and annotations: bounded, one line, inside a code span, inert.

Both Markdown writers are covered: the sticky PR comment (and check run summary) and
``gradebox gate --comment``; they are one renderer (:mod:`gradebox.patches.markdown`).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from gradebox.github.render import (
    MARKER,
    code,
    comment_body,
    fit,
    is_ours,
    line_annotations,
    report,
)
from gradebox.patches.model import ApplyReport
from gradebox.patches.outputs import comment
from gradebox.patches.tamper import TamperHit

from .conftest import make_row

PAYLOADS = [
    "[click](https://evil.example/phish)",
    "![pixel](https://evil.example/p.png)",
    "<img src=x onerror=alert(1)>",
    "</details><script>alert(1)</script>",
    "@octocat please merge",
    "` closes the span `<b>bold</b>`",
    "line one\n\n# A heading\n- [x] a task",
    "\u202eevil bidi override\u2066",
    f"{MARKER} --> <!-- x",
    "**bold** _it_ ~~s~~ | a | table |",
    "zero\u200bwidth\u200d evil\ufeff \u2066isolate\u2069 \u200e\u202a",
    "<https://evil.example/autolink> and www.evil.example",
    "[ref]: https://evil.example/reflink",
    "line\r\n## evil heading after a CR\u2028# and a line separator",
    "``double `tick` evil`` \\` escaped",
    "@everyone evil",
    "&lt;img src=x&gt; &#60;evil&#62;",
]
INVISIBLE = (
    "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"
)
WRITERS = {
    "sticky comment": lambda rows: comment_body(rows, commit="c" * 40),
    "--comment": comment,
}


def _outside_code(markdown: str) -> str:
    return re.sub(r"`[^`\n]*`", "", markdown)


def _hostile_row(payload: str):
    """Every untrusted field of a row carries the payload."""
    tamper = (TamperHit("calc/ops.py", 3, "T001", payload),)
    apply = ApplyReport(
        "exact",
        detail=payload,
        protected=(payload,),
        stripped=(payload,),
        restored=(payload,),
        protected_lines=(f"{payload}:3 {payload}",),
        added_tests=(payload,),
    )
    return make_row(
        id=payload,
        detail=payload,
        message=payload,
        test_id=payload,
        tamper=tamper,
        apply=apply,
        added={payload: "N2P"},
        rules=(("fail_to_pass", payload), ("static_policy", f"base:{'d' * 40}:{payload}")),
    )


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("payload", PAYLOADS)
def test_untrusted_text_stays_inside_code_spans(payload, writer):
    body = WRITERS[writer]([_hostile_row(payload)])
    if writer == "sticky comment":
        assert body.startswith(MARKER + "\n") and is_ours(body)
        body = body.split("\n", 1)[1]
    rest = _outside_code(body)
    for needle in (
        "evil",
        "octocat",
        "everyone",
        "<img",
        "<script",
        "</details",
        "<!--",
        "alert",
        "# A heading",
        "bold",
        "&lt;",
        "&#60;",
    ):
        assert needle not in rest, (needle, rest)
    assert not set(INVISIBLE) & set(body), "bidi or zero-width characters survived"
    assert all(ord(c) >= 32 for c in body.replace("\n", "")), "a control character survived"
    html = MarkdownIt("commonmark").render(body)
    assert "<a " not in html and "<img" not in html and "<script" not in html
    assert "<!--" not in html  # the marker is the sticky comment's first line only
    assert html.count("<h2>") == 1 and html.count("<h3>") == 1  # ours: the title, the gate
    assert not re.search(r"<h[14-6]>", html)
    outside = re.sub(r"<code>.*?</code>", "", html)
    assert "@octocat" not in outside and "@everyone" not in outside


def test_both_writers_are_one_renderer():
    row = make_row()
    assert comment_body([row]) == MARKER + "\n" + comment([row])
    assert comment([row]) == report([row])


def test_the_report_shows_rules_protected_lines_added_tests_tripwires_and_stripped():
    apply = ApplyReport(
        "offset",
        protected=("tests/test_ops.py",),
        stripped=("tests/test_ops.py",),
        protected_lines=("tests/test_ops.py:12 an assertion changed",),
        added_tests=("tests/test_new.py",),
    )
    row = make_row(
        apply=apply,
        added={"tests/test_new.py::test_empty": "N2P", "tests/test_new.py::test_x": "N2F"},
        tripwires="tripped",
        rules=(
            ("static_policy", f"base:{'d' * 40}:.gradebox/policy.toml"),
            ("fail_to_pass", "workflow"),
        ),
    )
    for text in (comment([row]), comment_body([row])):
        assert "- applied with `offset`" in text
        assert "- protected paths changed: `tests/test_ops.py`" in text
        assert "  - `tests/test_ops.py:12 an assertion changed`" in text
        assert "**stripped** from the patch (`--protect-mode strip`), never graded" in text
        assert (
            "test files the patch adds or extends (run at head, reported): `tests/test_new.py`"
            in text
        )
        assert "- tests the patch adds: 1/2 pass at head" in text
        assert "  - `tests/test_new.py::test_x` (N2F)" in text
        assert "- tripwires: **tripped**" in text
        assert f"`static_policy` from `base:{'d' * 40}:.gradebox/policy.toml`" in text
        assert "`fail_to_pass` from `workflow`" in text
    quiet = comment([make_row(tripwires="ok")])
    assert "- tripwires: ok" in quiet and "stripped" not in quiet and "rules" not in quiet


@given(st.text())
def test_code_is_one_inert_span(text):
    span = code(text, 80)
    assert span.startswith("`") and span.endswith("`") and span.count("`") == 2
    assert "\n" not in span and "<" not in span and ">" not in span
    assert len(span) <= 82


@given(st.text(max_size=3000), st.integers(min_value=200, max_value=2000))
def test_fit_never_exceeds_the_limit(text, limit):
    out = fit(text, limit)
    assert len(out) <= limit
    assert out == text or "truncated" in out


def test_a_marker_only_counts_as_the_first_line():
    assert is_ours(MARKER + "\nbody")
    assert not is_ours("hello\n" + MARKER)
    assert not is_ours(None)
    assert not is_ours("<!-- gradebox:gate --> trailing words\n")


def test_annotations_are_on_changed_lines_only_and_bounded():
    tamper = (
        TamperHit("calc/ops.py", 9, "T004", "calls os._exit"),
        TamperHit("../outside.py", 1, "T001", "x"),
    )
    row = make_row(n_findings=2, message="m" * 5000, tamper=tamper)
    notes = line_annotations([row])
    assert [(a.path, a.line, a.level) for a in notes] == [
        ("calc/ops.py", 1, "failure"),
        ("calc/ops.py", 2, "failure"),
        ("calc/ops.py", 9, "warning"),
    ]
    assert all(len(a.message) <= 1000 for a in notes)


def test_the_report_says_what_regressed():
    text = report([make_row()])
    assert "PASS_TO_PASS: 0/1 still pass" in text
    assert "regressed: `tests/test_ops.py::test_add` (P2F)" in text
