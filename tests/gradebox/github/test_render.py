"""Untrusted text in the comment and annotations: bounded, one line, inside a code span, inert."""

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
]


def _outside_code(markdown: str) -> str:
    return re.sub(r"`[^`\n]*`", "", markdown)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_untrusted_text_stays_inside_code_spans(payload):
    tamper = (TamperHit("calc/ops.py", 3, "T001", payload),)
    row = make_row(id=payload, detail=payload, message=payload, test_id=payload, tamper=tamper)
    body = comment_body([row], commit="c" * 40)
    assert body.startswith(MARKER + "\n") and is_ours(body)
    rest = _outside_code(body.split("\n", 1)[1])
    for needle in (
        "evil",
        "octocat",
        "<img",
        "<script",
        "</details",
        "<!--",
        "alert",
        "# A heading",
        "bold",
        "\u202e",
    ):
        assert needle not in rest, (needle, rest)
    html = MarkdownIt("commonmark").render(body)
    assert "<a " not in html and "<img" not in html and "<script" not in html
    assert html.count("<!--") == 1  # the marker only
    assert "@octocat" not in re.sub(r"<code>.*?</code>", "", html)


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
