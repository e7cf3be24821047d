"""Tests for gradebox.pipeline.extract: the reply corpus in tests/cases plus unit rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradebox.pipeline.extract import Extraction, extract

CASES = Path(__file__).resolve().parents[2] / "cases"
REPLIES = CASES / "replies"


def _rows() -> list[dict[str, Any]]:
    lines = (CASES / "extract.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


ROWS = _rows()


def _from_file(row: dict[str, Any]) -> Extraction:
    reply = (REPLIES / row["file"]).read_text(encoding="utf-8")
    return extract(
        reply=reply, code=None, fn=row["fn"], helpers_allowed=row.get("helpers_allowed", False)
    )


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_reply_corpus(row: dict[str, Any]) -> None:
    got = _from_file(row)
    assert got.contract == row["contract"], got.detail
    for text in row.get("code_has", []):
        assert text in got.code
    for text in row.get("code_lacks", []):
        assert text not in got.code
    for text in row.get("detail_has", []):
        assert text in got.detail
    for text in row.get("claim_has", []):
        assert text in got.claim_text
    for text in row.get("claim_lacks", []):
        assert text not in got.claim_text
    if row.get("code_empty"):
        assert got.code == ""
    if row.get("claim_empty"):
        assert got.claim_text == ""


def test_every_reply_file_is_in_the_table() -> None:
    used = {row["file"] for row in ROWS}
    on_disk = {p.name for p in REPLIES.glob("*.md")}
    assert used == on_disk
    assert len({row["id"] for row in ROWS}) == len(ROWS)


def test_ok_code_from_a_block_is_exactly_the_block() -> None:
    reply = "Intro\n```python\nimport math\n\ndef f(x):\n    return math.sqrt(x)\n```\nBye"
    got = extract(reply=reply, code=None, fn="f")
    assert got.code == "import math\n\ndef f(x):\n    return math.sqrt(x)\n"
    assert got.claim_text == "Intro\nBye"


def test_code_sample_is_taken_as_is_with_no_claim_text() -> None:
    code = "def f(x):\n    return x  # O(1)\n"
    got = extract(reply=None, code=code, fn="f")
    assert got == Extraction(code=code, contract="ok", detail="code sample", claim_text="")


def test_code_sample_is_not_searched_for_fences() -> None:
    code = "```python\ndef f(x):\n    return x\n```\n"
    got = extract(reply=None, code=code, fn="f")
    assert got.code == code
    assert got.contract == "ok"
    assert "does not parse" in got.detail


def test_code_sample_function_rules_apply() -> None:
    code = "def helper():\n    pass\n\ndef f():\n    return helper()\n"
    assert extract(reply=None, code=code, fn="f").contract == "multiple_functions"
    assert extract(reply=None, code=code, fn="f", helpers_allowed=True).contract == "ok"
    assert extract(reply=None, code=code, fn="g").contract == "missing_function"


@pytest.mark.parametrize("reply", ["", "   \n\n", "```python\n```\n"])
def test_empty_replies_are_no_code(reply: str) -> None:
    got = extract(reply=reply, code=None, fn="f")
    assert (got.contract, got.code) == ("no_code", "")


def test_empty_code_sample_is_no_code() -> None:
    assert extract(reply=None, code=" \n", fn="f").contract == "no_code"


@pytest.mark.parametrize(("reply", "code"), [(None, None), ("x", "y")])
def test_exactly_one_of_reply_and_code(reply: str | None, code: str | None) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        extract(reply=reply, code=code, fn="f")


def test_crlf_reply() -> None:
    reply = "Here:\r\n```python\r\ndef f():\r\n    return 1\r\n```\r\nDone, O(1).\r\n"
    got = extract(reply=reply, code=None, fn="f")
    assert got.contract == "ok"
    assert got.code == "def f():\n    return 1\n"
    assert got.claim_text == "Here:\nDone, O(1)."


def test_closing_fence_must_be_as_long_as_the_opening() -> None:
    reply = '````python\ndef f():\n    return """\n```\n"""\n````\n'
    got = extract(reply=reply, code=None, fn="f")
    assert got.contract == "ok"
    assert got.code == 'def f():\n    return """\n```\n"""\n'


def test_backtick_fence_info_with_backticks_is_inline_code() -> None:
    reply = "Use ```python``` fences.\n```python\ndef f():\n    pass\n```\n"
    got = extract(reply=reply, code=None, fn="f")
    assert got.contract == "ok"
    assert "Use ```python``` fences." in got.claim_text


def test_tilde_fence_is_not_closed_by_backticks() -> None:
    reply = "~~~python\ndef f():\n    s = '''\n```\n'''\n    return s\n~~~\n"
    got = extract(reply=reply, code=None, fn="f")
    assert got.contract == "ok"
    assert "```" in got.code


@pytest.mark.parametrize("info", ["py", "python3", "PY3", "{.python}", "python title=sol.py"])
def test_python_info_strings(info: str) -> None:
    reply = f"```{info}\ndef f():\n    pass\n```\n```{info}\ndef f():\n    pass\n```\n"
    # Two defining blocks prove both were seen as Python.
    assert extract(reply=reply, code=None, fn="f").contract == "multiple_blocks"


@pytest.mark.parametrize("info", ["bash", "sh", "json", "text", "console", "pycon", "output", "js"])
def test_other_info_strings_are_ignored(info: str) -> None:
    reply = f"```{info}\ndef g():\n    pass\n```\n```python\ndef f():\n    pass\n```\n"
    got = extract(reply=reply, code=None, fn="f")
    assert got.contract == "ok"
    assert "def g" not in got.code


def test_untagged_expression_block_is_output_but_statement_block_is_code() -> None:
    output = "```python\ndef f():\n    return [1]\n```\n```\n[1]\n```\n"
    assert extract(reply=output, code=None, fn="f").contract == "ok"
    imports = "```python\ndef f():\n    return [1]\n```\n```\nimport json\n```\n"
    assert extract(reply=imports, code=None, fn="f").contract == "multiple_blocks"


def test_usage_block_that_rebinds_fn_is_not_usage() -> None:
    reply = "```python\ndef f():\n    return 1\n```\n```python\nf = print\nf(1)\n```\n"
    assert extract(reply=reply, code=None, fn="f").contract == "multiple_blocks"


def test_usage_block_that_defines_a_helper_is_not_usage() -> None:
    reply = "```python\ndef f():\n    return 1\n```\n```python\ndef show():\n    print(f())\n```\n"
    assert extract(reply=reply, code=None, fn="f").contract == "multiple_blocks"


def test_class_named_fn_is_missing() -> None:
    got = extract(reply=None, code="class f:\n    pass\n", fn="f")
    assert got.contract == "missing_function"
    assert "class" in got.detail


def test_methods_do_not_count_as_functions() -> None:
    code = "class A:\n    def m(self):\n        pass\n\ndef f():\n    return A()\n"
    assert extract(reply=None, code=code, fn="f").contract == "ok"


def test_async_helper_counts_as_a_function() -> None:
    code = "async def g():\n    pass\n\ndef f():\n    return 1\n"
    assert extract(reply=None, code=code, fn="f").contract == "multiple_functions"


def test_code_failing_compile_but_parsing_is_checked_for_functions() -> None:
    # ``return`` at module level parses, so the function rules still apply.
    got = extract(reply=None, code="return 1\n", fn="f")
    assert got.contract == "missing_function"


@given(st.text(max_size=300), st.booleans())
def test_extract_never_raises(reply: str, helpers: bool) -> None:
    got = extract(reply=reply, code=None, fn="f", helpers_allowed=helpers)
    assert got.contract in {
        "ok",
        "no_code",
        "multiple_blocks",
        "multiple_functions",
        "missing_function",
    }
    if got.contract in {"no_code", "multiple_blocks"}:
        assert got.code == ""


_FENCED = st.lists(
    st.sampled_from(
        ["```python", "```", "~~~", "````", "def f():", "    return 1", "x", ">>> f()"]
    ),
    max_size=12,
).map("\n".join)


@given(_FENCED)
def test_extract_never_raises_on_fence_soup(reply: str) -> None:
    got = extract(reply=reply, code=None, fn="f")
    # Whatever is chosen is made of the reply's own lines, never of fence lines' info.
    assert set(got.code.splitlines()) <= set(reply.splitlines())
