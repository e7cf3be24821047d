"""Tests for gradebox.pipeline.gate: syntax, banned imports, claims, and that nothing runs."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradebox.pipeline.gate import DEFAULT_BANNED, GateResult, check_syntax, find_banned, gate

IS_EVEN = "def is_even(n):\n    return n % 2 == 0\n"
LOOPING = "def is_even(n):\n    for _ in range(1):\n        pass\n    return n % 2 == 0\n"


def _gate(
    code: str,
    *,
    banned: Sequence[str] = DEFAULT_BANNED,
    claim_text: str = "",
    claim: str | None = None,
    allow_loops: bool = False,
) -> GateResult:
    return gate(
        code,
        fn="is_even",
        banned=banned,
        claim_text=claim_text,
        claim=claim,
        allow_loops=allow_loops,
    )


def test_default_banned_is_the_documented_list() -> None:
    assert DEFAULT_BANNED == (
        "os",
        "subprocess",
        "socket",
        "shutil",
        "ctypes",
        "importlib",
        "pathlib",
    )


def test_clean_code_does_not_fire() -> None:
    got = _gate(IS_EVEN)
    assert got == GateResult("ok", "", (), "none", "no complexity claim")
    assert not got.fired


@pytest.mark.parametrize(
    ("code", "detail"),
    [
        ("def f(:\n    pass\n", "line 1: invalid syntax"),
        ("x = 1\ny = (\n", "line 2: '(' was never closed"),
        ("def f():\nreturn 1\n", "line 2: expected an indented block"),
        ("return 1\n", "line 1: 'return' outside function"),
        ("break\n", "line 1: 'break' outside loop"),
        ("def f():\n    nonlocal x\n", "line 2: no binding for nonlocal 'x' found"),
        ("from __future__ import braces\n", "line 1: not a chance"),
        ("x = 1\0\n", "null bytes"),
        ("s = '\ud800'\n", "surrogates not allowed"),
        ("x = " + "(" * 300 + ")" * 300 + "\n", "too many nested parentheses"),
    ],
    ids=[
        "invalid",
        "unclosed",
        "indent",
        "return_outside",
        "break_outside",
        "nonlocal",
        "braces",
        "null_byte",
        "surrogate",
        "deep_parens",
    ],
)
def test_syntax_errors(code: str, detail: str) -> None:
    status, got = check_syntax(code)
    assert status == "error"
    assert detail in got
    assert _gate(code).fired


@pytest.mark.parametrize(
    "code",
    ["x = " + "-" * 200_000 + "1\n", "x = 1" + " + 1" * 200_000 + "\n"],
    ids=["parser_stack", "compiler_recursion"],
)
def test_pathological_nesting_is_an_error_not_a_crash(code: str) -> None:
    status, detail = check_syntax(code)
    assert status == "error"
    assert "nested too deeply" in detail


def test_syntax_warnings_are_not_printed(capfd: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _gate("def is_even(n):\n    return n is 1 or '\\d'\n")
    assert got.syntax == "ok"
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize(
    "code",
    [
        "import os",
        "import os.path",
        "from os import path",
        "from os.path import join",
        "import os as o",
        "import sys, os",
        "def f():\n    import os\n",
        "try:\n    import os\nexcept ImportError:\n    pass\n",
    ],
)
def test_banned_import_forms(code: str) -> None:
    assert find_banned(code, DEFAULT_BANNED) == ("os",)
    assert _gate(code + "\n").fired


@pytest.mark.parametrize(
    "code",
    [
        "import osmosis",
        "import os_utils",
        "from . import os",
        "from .os import path",
        "from ..subprocess import run",
        "import posixpath",
        "x = 'import os'",
        "# import os",
        "from mypkg import os",
    ],
)
def test_not_banned(code: str) -> None:
    assert find_banned(code, DEFAULT_BANNED) == ()


def test_dynamic_imports_are_the_sandboxes_job() -> None:
    # Documented: the gate is a fast reject, not a boundary.
    code = "m = __import__('os')\nexec('import subprocess')\n"
    assert find_banned(code, DEFAULT_BANNED) == ()


def test_all_matches_are_reported_sorted_once() -> None:
    code = "import subprocess\nimport os\nimport os.path\nfrom importlib import util\n"
    assert find_banned(code, DEFAULT_BANNED) == ("importlib", "os", "subprocess")


def test_dotted_entry_matches_that_module_only() -> None:
    assert find_banned("import os", ["os.path"]) == ()
    assert find_banned("import os.path", ["os.path"]) == ("os.path",)
    assert find_banned("from os import path", ["os.path"]) == ("os.path",)
    assert find_banned("from os.path import join", ["os.path"]) == ("os.path",)
    assert find_banned("from os import getcwd", ["os.path"]) == ()


def test_empty_banned_switches_the_check_off() -> None:
    assert not _gate("import os\n", banned=()).fired
    assert not _gate("import os\n", banned=[""]).fired
    assert _gate("import os\n", banned=[" os "]).banned == ("os",)


def test_custom_banned_replaces_the_default() -> None:
    got = _gate("import os\nimport requests\n", banned=["requests"])
    assert got.banned == ("requests",)


def test_banned_as_a_string_is_refused() -> None:
    with pytest.raises(TypeError, match="sequence"):
        find_banned("import o", "os")


def test_no_banned_report_for_code_that_does_not_compile() -> None:
    got = _gate("import os\ndef f(:\n")
    assert got.syntax == "error"
    assert got.banned == ()


def test_claim_read_from_prose() -> None:
    got = _gate(LOOPING, claim_text="Runs in O(1) time.")
    assert got.claim == "false"
    assert "line 2" in got.claim_detail
    assert got.fired


def test_explicit_claim_wins_over_prose() -> None:
    assert _gate(LOOPING, claim_text="This is O(1).", claim="O(n)").claim == "unchecked"
    assert _gate(LOOPING, claim_text="This is O(n).", claim="O(1)").claim == "false"


def test_blank_explicit_claim_suppresses_prose() -> None:
    assert _gate(LOOPING, claim_text="This is O(1).", claim="").claim == "none"


def test_claim_held_does_not_fire() -> None:
    got = _gate(IS_EVEN, claim_text="O(1)")
    assert (got.claim, got.fired) == ("held", False)


def test_allow_loops_holds_the_claim() -> None:
    got = _gate(LOOPING, claim_text="O(1)", allow_loops=True)
    assert (got.claim, got.fired) == ("held", False)


def test_unchecked_claim_does_not_fire() -> None:
    assert not _gate(LOOPING, claim_text="amortized O(1)").fired


def test_gate_never_runs_the_code(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "ran"
    code = (
        f"open({str(marker)!r}, 'w').write('x')\n"
        "print('side effect')\n"
        "def is_even(n):\n"
        f"    open({str(marker)!r}, 'w').write('x')\n"
        "    return True\n"
        "is_even(1)\n"
        "raise SystemExit(3)\n"
    )
    got = _gate(code, claim="O(1)")
    assert got.syntax == "ok"
    assert not marker.exists()
    assert capfd.readouterr() == ("", "")


_PYTHONISH = st.text(
    alphabet=st.sampled_from(
        list("deflambdimportos()[]{}:=,.'\"\\\n\t #@0123456789+-*/<>!\x00\ud800é")
    ),
    max_size=200,
)


@given(st.one_of(st.text(max_size=300), _PYTHONISH), st.sampled_from([None, "O(1)", "O(n)", ""]))
def test_gate_never_raises(code: str, claim: str | None) -> None:
    got = _gate(code, claim=claim, claim_text=code)
    assert got.syntax in {"ok", "error"}
    assert (got.syntax == "error") == bool(got.syntax_detail)
    assert got.claim in {"none", "held", "false", "unchecked"}
    assert got.banned == tuple(sorted(set(got.banned)))
    assert set(got.banned) <= set(DEFAULT_BANNED)
