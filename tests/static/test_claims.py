"""Tests for static.claims: finding a claim in prose and falsifying O(1)."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from static.claims import check_claim, find_claim

FIND = [
    ("This is O(1).", "O(1)"),
    ("It is O (1) overall.", "O(1)"),
    ("Runs in O( 1 ) time.", "O(1)"),
    ("It runs in constant time.", "O(1)"),
    ("A constant-time solution.", "O(1)"),
    ("Sorting makes it O(n log n).", "O(n log n)"),
    ("Complexity: O(nlogn)", "O(n log n)"),
    ("Complexity: O(n * log(n))", "O(n log n)"),
    ("Complexity: O(n²)", "O(n^2)"),
    ("Complexity: O(n**2)", "O(n^2)"),
    ("Binary search: O(log(n)).", "O(log n)"),
    ("It takes linear time.", "O(n)"),
    ("Appending is amortized O(1).", "amortized O(1)"),
    ("Appending is amortised O(1).", "amortized O(1)"),
    ("Each push is O(1) amortized.", "amortized O(1)"),
    ("It runs in amortized constant time.", "amortized O(1)"),
    ("Lookups make it O(1) on average.", "average O(1)"),
    ("It is O(1) in the worst case.", "O(1)"),
    ("In the best case it is O(1).", "best-case O(1)"),
    ("The best approach is O(1).", "O(1)"),
    (r"Complexity: $\mathcal{O}(1)$", "O(1)"),
    ("Complexity: `O(1)`", "O(1)"),
    ("It runs in O(n) time and O(1) space.", "O(n)"),
    ("Time: O(n), Space: O(1)", "O(n)"),
    ("Time complexity: O(1). Space complexity: O(1).", "O(1)"),
    ("Time and space complexity: O(1)", "O(1)"),
    ("I use a set for O(1) lookups, so the whole thing is O(n).", "O(n)"),
    ("The naive approach is O(n^2), but this one is O(n).", "O(n)"),
    ("Instead of the O(n) loop, the formula gives O(1).", "O(1)"),
    ("This is much better than O(n^2): it is O(n).", "O(n)"),
    ("It is O(1), as fast as it gets. Truly O(1).", "O(1)"),
    ("First it sorts, O(n log n), then scans in O(n).", "O(n log n); O(n)"),
]

NO_CLAIM = [
    "",
    "Here is the function.",
    "Space complexity: O(1).",
    "It uses O(1) extra memory.",
    "It only needs constant space.",
    "This isn't O(1), it has to scan the list.",
    "It is not O(1).",
    "A dict gives constant-time lookups.",
    "FOO(1) and BigO(1) are not claims.",
    "The result is o(1) in the limit.",
    "Call f(1) to get the answer.",
]


@pytest.mark.parametrize(("text", "claim"), FIND, ids=[t for t, _ in FIND])
def test_find_claim(text: str, claim: str) -> None:
    assert find_claim(text) == claim


@pytest.mark.parametrize("text", NO_CLAIM)
def test_find_no_claim(text: str) -> None:
    assert find_claim(text) is None


@given(st.text(max_size=300))
def test_find_claim_never_raises(text: str) -> None:
    got = find_claim(text)
    assert got is None or "O(" in got


LOOPS = [
    ("for", "def f(n):\n    for i in range(n):\n        pass\n", "line 2: `for` loop in `f`"),
    ("while", "def f(n):\n    while n:\n        n -= 1\n", "line 2: `while` loop in `f`"),
    ("listcomp", "def f(n):\n    return [i for i in n]\n", "line 2: list comprehension"),
    ("setcomp", "def f(n):\n    return {i for i in n}\n", "line 2: set comprehension"),
    ("dictcomp", "def f(n):\n    return {i: 1 for i in n}\n", "line 2: dict comprehension"),
    ("genexp", "def f(n):\n    return sum(i for i in n)\n", "line 2: generator expression"),
    (
        "async_for",
        "async def f(n):\n    async for i in n:\n        pass\n",
        "line 2: `async for` loop",
    ),
    (
        "nested_function",
        "def f(n):\n    def inner():\n        while True:\n            break\n    return inner()\n",
        "line 3: `while` loop in `f`",
    ),
    (
        "lambda_with_comprehension",
        "def f(n):\n    g = lambda: [x for x in n]\n    return g\n",
        "line 2: list comprehension",
    ),
    (
        "first_loop_by_line",
        "def f(n):\n    x = [i for i in n]\n    for i in n:\n        pass\n",
        "line 2: list comprehension",
    ),
    (
        "helper_called",
        "def _scan(n):\n    for i in n:\n        pass\n\ndef f(n):\n    return _scan(n)\n",
        "line 2: `for` loop in `_scan` (called from `f`)",
    ),
    (
        "helper_transitive",
        "def a(n):\n    while n:\n        n -= 1\n\ndef b(n):\n    return a(n)\n\n"
        "def f(n):\n    return b(n)\n",
        "line 2: `while` loop in `a`",
    ),
    (
        "recursion",
        "def f(n):\n    return 1 if n == 0 else f(n - 1)\n",
        "`f` is called again in `f`",
    ),
    (
        "mutual_recursion",
        "def g(n):\n    return f(n - 1)\n\ndef f(n):\n    return 1 if n == 0 else g(n)\n",
        "`f` is called again in `g` (called from `f`)",
    ),
    (
        "recursion_in_nested",
        "def f(n):\n    def go():\n        return f(n - 1)\n    return go() if n else 0\n",
        "`f` is called again in `f` (recursion)",
    ),
]


@pytest.mark.parametrize(("code", "detail"), [c[1:] for c in LOOPS], ids=[c[0] for c in LOOPS])
def test_o1_claim_falsified(code: str, detail: str) -> None:
    status, got = check_claim(code, "f", "O(1)", allow_loops=False)
    assert status == "false"
    assert detail in got


@pytest.mark.parametrize(("code", "detail"), [c[1:] for c in LOOPS], ids=[c[0] for c in LOOPS])
def test_allow_loops_holds(code: str, detail: str) -> None:
    assert check_claim(code, "f", "O(1)", allow_loops=True)[0] == "held"


HELD = [
    ("plain", "def f(n):\n    return n % 2 == 0\n"),
    ("loop_elsewhere", "def g(n):\n    for i in n:\n        pass\n\ndef f(n):\n    return n\n"),
    (
        "loop_at_module_level",
        "TABLE = [i * i for i in range(10)]\n\ndef f(n):\n    return TABLE[n]\n",
    ),
    ("loop_in_default", "def f(n, t=[i for i in range(3)]):\n    return t[n]\n"),
    (
        "method_call_not_followed",
        "class A:\n    def g(self):\n        pass\n\ndef f(n):\n    return A().g()\n",
    ),
    ("builtin_iteration_not_seen", "def f(n):\n    return sum(n)\n"),
    ("attribute_named_f", "def f(n):\n    return n.f()\n"),
]


@pytest.mark.parametrize("code", [c[1] for c in HELD], ids=[c[0] for c in HELD])
def test_o1_claim_held(code: str) -> None:
    assert check_claim(code, "f", "O(1)", allow_loops=False)[0] == "held"


@pytest.mark.parametrize("claim", ["O(1)", "O (1)", "constant time", "  O(1)  "])
def test_explicit_claims_are_normalized(claim: str) -> None:
    assert check_claim(LOOPS[0][1], "f", claim, allow_loops=False)[0] == "false"


@pytest.mark.parametrize(
    "claim",
    ["O(n)", "O(n log n)", "amortized O(1)", "average O(1)", "O(1); O(n)", "fast", "O(1) space"],
)
def test_other_claims_are_unchecked(claim: str) -> None:
    status, detail = check_claim(LOOPS[0][1], "f", claim, allow_loops=False)
    assert status == "unchecked"
    assert "only plain O(1)" in detail


@pytest.mark.parametrize("claim", [None, "", "   "])
def test_no_claim(claim: str | None) -> None:
    assert check_claim(LOOPS[0][1], "f", claim, allow_loops=False) == (
        "none",
        "no complexity claim",
    )


@pytest.mark.parametrize(
    ("code", "detail"),
    [
        ("def f(:\n", "does not parse"),
        ("def g(n):\n    return n\n", "no top-level function `f`"),
        ("class A:\n    def f(self):\n        for i in self:\n            pass\n", "no top-level"),
    ],
)
def test_o1_claim_unchecked_without_a_function(code: str, detail: str) -> None:
    status, got = check_claim(code, "f", "O(1)", allow_loops=False)
    assert status == "unchecked"
    assert detail in got


def test_last_top_level_definition_is_checked() -> None:
    code = "def f(n):\n    for i in n:\n        pass\n\ndef f(n):\n    return n\n"
    assert check_claim(code, "f", "O(1)", allow_loops=False)[0] == "held"


def test_claims_module_imports_only_the_standard_library_and_the_shared_parse() -> None:
    import static.claims as module

    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    # static.source is the one thread-safe parse, in the same layer; warnings.catch_warnings()
    # swaps process-wide state and is not thread-safe, so it is not used here.
    assert imported <= {"__future__", "ast", "itertools", "re", "typing", "static.source"}


# Attacks on the scan's cost: a reply is attacker-controlled text of any length.

LONG_REPLIES = {
    "open-parens": lambda n: "O(" * n,
    "one-claim-repeated": lambda n: "It is O(1). " * n,
    "distinct-claims": lambda n: "".join(f"O(n{i}) " for i in range(n)),
    "unclosed-nesting": lambda n: ("O(" + "(" * 38) * n,
}


def _best_cpu(text: str, repeats: int = 5) -> float:
    """The least CPU time (this thread's) of ``repeats`` scans: other processes do not count."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        find_claim(text)
        best = min(best, time.thread_time() - start)
    return best


@pytest.mark.parametrize("shape", sorted(LONG_REPLIES))
def test_claim_scan_is_linear_in_the_reply(shape: str) -> None:
    # 4x the text costs ~4x when linear and ~16x when quadratic: the ratio of CPU times, not a
    # wall time. A busy machine can still inflate one measurement (caches, frequency), so up to
    # three tries: a quadratic scan never gets under 8 however often it is tried.
    make = LONG_REPLIES[shape]
    small, large = make(4_000), make(16_000)
    ratios = []
    for _ in range(3):
        ratios.append(_best_cpu(large) / max(_best_cpu(small), 1e-6))
        if ratios[-1] < 8:
            return
    raise AssertionError(f"{shape}: 4x the text took {min(ratios):.1f}x the CPU time ({ratios})")


def test_a_200_kb_reply_of_distinct_claims_keeps_every_claim_in_order() -> None:
    text = "".join(f"O(n{i}) " for i in range(25_000))
    assert len(text) > 200_000
    claims = find_claim(text)
    assert claims is not None
    assert claims.split("; ")[:3] == ["O(n0)", "O(n1)", "O(n2)"]
    assert len(claims.split("; ")) == 25_000
    assert find_claim("O(1) and O(n), then O(1) again") == "O(1); O(n)"
